package sqlitestore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/apitoken"
	"oncepost/shared/pace"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Tokens are kept by hash: the token itself is nowhere in the file; a
// name is unique even after a revoke; a revoke keeps its first time.
func TestTokens(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	secret := apitoken.New()
	cms := apitoken.Token{ID: apitoken.NewID(), Name: "cms", Hash: apitoken.Hash(secret), Scopes: []apitoken.Scope{apitoken.ScopePosts, apitoken.ScopeRead},
		Rate: 5, CreatedAt: t0}
	if err := s.AddToken(ctx, cms); err != nil {
		t.Fatal(err)
	}
	again := cms
	again.ID, again.Hash = apitoken.NewID(), apitoken.Hash(apitoken.New())
	if err := s.AddToken(ctx, again); !errors.Is(err, post.ErrConflict) {
		t.Fatalf("a second token named cms: %v, want post.ErrConflict", err)
	}
	got, err := s.TokenByHash(ctx, apitoken.Hash(secret))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cms, got); diff != "" {
		t.Errorf("TokenByHash (-want +got):\n%s", diff)
	}
	if _, err := s.TokenByHash(ctx, apitoken.Hash(apitoken.New())); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("unknown hash: %v, want post.ErrNotFound", err)
	}
	var hits int
	if err := s.r.QueryRow(`SELECT count(*) FROM api_tokens WHERE instr(hash || name || scopes, ?) > 0`, secret).Scan(&hits); err != nil || hits != 0 {
		t.Errorf("the token itself is stored (%d rows, %v)", hits, err)
	}

	if err := s.TouchToken(ctx, cms.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	revoked, err := s.RevokeToken(ctx, "cms", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !revoked.RevokedAt.Equal(t0.Add(time.Hour)) || !revoked.LastUsedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("revoked: %+v", revoked)
	}
	if again, err := s.RevokeToken(ctx, "cms", t0.Add(2*time.Hour)); err != nil || !again.RevokedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("second revoke: %v, %v; want the first time kept", again.RevokedAt, err)
	}
	if _, err := s.RevokeToken(ctx, "nope", t0); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("revoking an unknown name: %v", err)
	}
	if got, err := s.TokenByHash(ctx, cms.Hash); err != nil || !got.Revoked() {
		t.Errorf("a revoked token is still found, marked revoked: %+v %v", got, err)
	}
	other := apitoken.Token{ID: apitoken.NewID(), Name: "alpha", Hash: apitoken.Hash(apitoken.New()), Scopes: []apitoken.Scope{apitoken.ScopeAll}, CreatedAt: t0}
	if err := s.AddToken(ctx, other); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tk := range list {
		names = append(names, tk.Name)
	}
	if strings.Join(names, ",") != "alpha,cms" {
		t.Errorf("ListTokens: %v, want alpha,cms", names)
	}
}

// PaceTimes reads what Pace wrote, and takes nothing.
func TestPaceTimes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	rates := []platform.Rate{{Count: 4, Per: time.Hour}}
	if tats, err := s.PaceTimes(ctx, "news"); err != nil || len(tats) != 0 {
		t.Fatalf("before any send: %v %v", tats, err)
	}
	for range 2 {
		if wait, err := s.Pace(ctx, "news", rates, t0); err != nil || wait != 0 {
			t.Fatalf("Pace: %v %v", wait, err)
		}
	}
	tats, err := s.PaceTimes(ctx, "news")
	if err != nil {
		t.Fatal(err)
	}
	if left := pace.Left(tats, rates, t0); left[0] != 0 {
		t.Errorf("after two of two sends: %v left", left)
	}
	if wait, _ := s.Pace(ctx, "news", rates, t0); wait == 0 {
		t.Errorf("a third send was allowed after PaceTimes")
	}
}
