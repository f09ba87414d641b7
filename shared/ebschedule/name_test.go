package ebschedule_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"oncepost/shared/ebschedule"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// TestName checks schedule names: readable when possible, hashed when an
// id has a dot, the name would pass 64 bytes, or the slot has a fraction;
// always within Scheduler's charset and length, and deterministic.
// API reference: API_CreateSchedule.html (Name: 1-64, [0-9a-zA-Z-_.]+).
func TestName(t *testing.T) {
	slot := at("2026-12-01T09:00:00Z")
	long := strings.Repeat("x", 128) // post ids may be 128 bytes
	tests := []struct {
		name       string
		ref        publishing.TargetRef
		want       string // "" = hashed: check the prefix only
		wantPrefix string
	}{
		{"plain", publishing.TargetRef{Post: "launch", Account: "news", Slot: slot}, "post.launch.news.20261201T090000Z", ""},
		{"dashes and underscores", publishing.TargetRef{Post: "p-2026_01", Account: "acc-1", Slot: slot}, "post.p-2026_01.acc-1.20261201T090000Z", ""},
		{"slot in another zone", publishing.TargetRef{Post: "a", Account: "b", Slot: at("2026-12-01T10:00:00+01:00")}, "post.a.b.20261201T090000Z", ""},
		{"longest readable (64 bytes)", publishing.TargetRef{Post: post.ID(strings.Repeat("p", 21)), Account: post.AccountID(strings.Repeat("a", 20)), Slot: slot},
			"post." + strings.Repeat("p", 21) + "." + strings.Repeat("a", 20) + ".20261201T090000Z", ""},
		{"one byte too long", publishing.TargetRef{Post: post.ID(strings.Repeat("p", 21)), Account: post.AccountID(strings.Repeat("a", 21)), Slot: slot}, "", "post-20261201T090000Z-"},
		{"128-byte id", publishing.TargetRef{Post: post.ID(long), Account: "news", Slot: slot}, "", "post-20261201T090000Z-"},
		{"dot in post id", publishing.TargetRef{Post: "v1.2", Account: "news", Slot: slot}, "", "post-20261201T090000Z-"},
		{"dot in account id", publishing.TargetRef{Post: "launch", Account: "news.eu", Slot: slot}, "", "post-20261201T090000Z-"},
		{"sub-second slot", publishing.TargetRef{Post: "launch", Account: "news", Slot: slot.Add(time.Millisecond)}, "", "post-20261201T090000Z-"},
		{"empty ids", publishing.TargetRef{Slot: slot}, "", "post-20261201T090000Z-"},
		{"zero slot", publishing.TargetRef{Post: "a", Account: "b"}, "post.a.b.00010101T000000Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ebschedule.Name(tt.ref)
			if !namePattern.MatchString(got) {
				t.Fatalf("Name = %q: not 1-64 of [0-9a-zA-Z-_.]", got)
			}
			if got != ebschedule.Name(tt.ref) {
				t.Errorf("Name is not deterministic")
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("Name = %q, want %q", got, tt.want)
			}
			if tt.wantPrefix != "" && (!strings.HasPrefix(got, tt.wantPrefix) || len(got) != len(tt.wantPrefix)+32) {
				t.Errorf("Name = %q, want %s followed by 32 hex digits", got, tt.wantPrefix)
			}
		})
	}
}

// TestNameUnique checks that distinct targets get distinct names, for
// pairs built to collide in a naive encoding and for random targets over
// the post id charset ([A-Za-z0-9._-], up to 128 bytes).
// API reference: API_CreateSchedule.html (Name).
func TestNameUnique(t *testing.T) {
	slot := at("2026-12-01T09:00:00Z")
	pairs := [][2]publishing.TargetRef{
		{{Post: "a-b", Account: "c", Slot: slot}, {Post: "a", Account: "b-c", Slot: slot}},
		{{Post: "a.b", Account: "c", Slot: slot}, {Post: "a", Account: "b.c", Slot: slot}},
		{{Post: "a_b", Account: "c", Slot: slot}, {Post: "a", Account: "b_c", Slot: slot}},
		{{Post: "a", Account: "b", Slot: slot}, {Post: "a", Account: "b", Slot: slot.Add(time.Nanosecond)}},
		{{Post: "a", Account: "b", Slot: slot}, {Post: "a", Account: "b", Slot: slot.Add(time.Second)}},
	}
	for _, p := range pairs {
		if a, b := ebschedule.Name(p[0]), ebschedule.Name(p[1]); a == b {
			t.Errorf("%+v and %+v share the name %q", p[0], p[1], a)
		}
	}
	const charset = "abcXYZ019._-"
	rng := rand.New(rand.NewPCG(1, 2))
	id := func() string {
		n := 1 + rng.IntN(40)
		if rng.IntN(10) == 0 {
			n = 100 + rng.IntN(29)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = charset[rng.IntN(len(charset))]
		}
		return string(b)
	}
	seen := map[string]string{}
	for range 20000 {
		ref := publishing.TargetRef{Post: post.ID(id()), Account: post.AccountID(id()), Slot: slot.Add(time.Duration(rng.IntN(4)) * 500 * time.Millisecond)}
		key := fmt.Sprintf("%s\x00%s\x00%s", ref.Post, ref.Account, ref.Slot.Format(time.RFC3339Nano))
		name := ebschedule.Name(ref)
		if !namePattern.MatchString(name) {
			t.Fatalf("Name(%+v) = %q: not 1-64 of [0-9a-zA-Z-_.]", ref, name)
		}
		if other, ok := seen[name]; ok && other != key {
			t.Fatalf("%q and %q share the name %q", other, key, name)
		}
		seen[name] = key
	}
}
