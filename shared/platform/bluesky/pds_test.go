package bluesky

// Against the Bluesky reference PDS (npm @atproto/pds), started on
// 127.0.0.1 by shared/pdstest: what the adapter writes is what a real PDS
// stores, and the guarantee holds when the PDS's answer is lost.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/localpds"
	"oncepost/shared/pdstest"
	"oncepost/shared/platform"
)

// pdsAccount is an account on a fresh PDS and a client acting for it,
// optionally through a proxy.
type pdsAccount struct {
	pds     *pdstest.PDS
	account localpds.Account
	client  *Client
}

func newPDSAccount(t *testing.T, base string, pds *pdstest.PDS, handle string) pdsAccount {
	t.Helper()
	a := pds.CreateAccount(t, handle, "pw-"+handle)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The account is connected as an operator would: a session from the
	// password, once.
	s, err := CreateSession(ctx, nil, pds.URL, a.Handle, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	if s.DID != a.DID {
		t.Fatalf("createSession answered DID %s, want %s", s.DID, a.DID)
	}
	if base == "" {
		base = pds.URL
	}
	c, err := New(Config{BaseURL: base, DID: s.DID, Credential: s.Credential})
	if err != nil {
		t.Fatal(err)
	}
	return pdsAccount{pds: pds, account: a, client: c}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A publish stores one record under the entry's key; the same publish
// again (a re-send) is a no-op answering the same URI; Lookup by the key
// finds it; deleting twice removes it once and then does nothing.
func TestPDSPublishRepeatLookupDelete(t *testing.T) {
	pds := pdstest.Start(t)
	acc := newPDSAccount(t, "", pds, "alice.test")
	ctx := ctxFor(t)
	req := platform.PublishRequest{Handle: ledger.NewHandle(), Text: "First post from oncepost.", CreatedAt: time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC)}

	first, err := acc.client.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := acc.client.Publish(ctx, req)
	if err != nil {
		t.Fatalf("repeating the same publish: %v", err)
	}
	if again.RemoteID != first.RemoteID {
		t.Errorf("the repeat answered %s, the first %s", again.RemoteID, first.RemoteID)
	}
	records := pds.ListPosts(t, acc.account.DID)
	if len(records) != 1 {
		t.Fatalf("%d records after a publish and its repeat, want 1", len(records))
	}
	var stored postRecord
	if err := json.Unmarshal(records[0].Value, &stored); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(postRecord{Type: postCollection, Text: req.Text, CreatedAt: "2026-11-30T21:00:00.000Z"}, stored); diff != "" {
		t.Errorf("stored record (-want +got):\n%s", diff)
	}

	rp, found, err := acc.client.Lookup(ctx, platform.LookupQuery{Handle: req.Handle, CreatedAt: req.CreatedAt})
	if err != nil || !found || rp.RemoteID != first.RemoteID || rp.Text != req.Text {
		t.Fatalf("Lookup = %+v, %v, %v; want the post %s", rp, found, err, first.RemoteID)
	}
	if _, found, err := acc.client.Lookup(ctx, platform.LookupQuery{Handle: ledger.NewHandle(), CreatedAt: req.CreatedAt}); err != nil || found {
		t.Errorf("Lookup of another entry's key = found %v, %v; want not found", found, err)
	}

	for i := range 2 {
		if err := acc.client.Delete(ctx, first.RemoteID); err != nil {
			t.Fatalf("delete %d: %v", i+1, err)
		}
	}
	if exists, err := acc.client.Exists(ctx, first.RemoteID); err != nil || exists {
		t.Errorf("Exists after delete = %v, %v", exists, err)
	}
	if n := len(pds.ListPosts(t, acc.account.DID)); n != 0 {
		t.Errorf("%d records after delete, want 0", n)
	}
}

// losingProxy forwards to the PDS and, while armed, lets putRecord reach
// the PDS and complete there, then drops the answer: the client sees its
// connection closed after it wrote the request.
type losingProxy struct {
	upstream string
	armed    atomic.Bool
	dropped  atomic.Int32
}

func (p *losingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if strings.HasSuffix(r.URL.Path, "/com.atproto.repo.putRecord") && p.armed.CompareAndSwap(true, false) {
		p.dropped.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// The PDS commits the post and its answer is lost: the publish is
// Ambiguous (never a failure), Lookup by the record key finds the post,
// and the repository holds exactly one record — also after the
// publish is sent again, as a careless caller would.
func TestPDSAnswerLostAfterCommitLookupFindsOne(t *testing.T) {
	pds := pdstest.Start(t)
	proxy := &losingProxy{upstream: pds.URL}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	acc := newPDSAccount(t, srv.URL, pds, "bob.test")
	ctx := ctxFor(t)
	req := platform.PublishRequest{Handle: ledger.NewHandle(), Text: "This answer will be lost.", CreatedAt: time.Now().UTC().Truncate(time.Second)}

	proxy.armed.Store(true)
	_, err := acc.client.Publish(ctx, req)
	var amb *platform.Ambiguous
	if !errors.As(err, &amb) {
		t.Fatalf("publish with its answer dropped = %v, want Ambiguous", err)
	}
	if proxy.dropped.Load() != 1 {
		t.Fatalf("the proxy dropped %d answers, want 1", proxy.dropped.Load())
	}
	rp, found, err := acc.client.Lookup(ctx, platform.LookupQuery{Handle: req.Handle, CreatedAt: req.CreatedAt})
	if err != nil || !found || rp.Text != req.Text {
		t.Fatalf("Lookup after the lost answer = %+v, %v, %v; want the post", rp, found, err)
	}
	if n := len(pds.ListPosts(t, acc.account.DID)); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
	// Even a re-send (which the ledger never makes after a found Lookup)
	// cannot make a second post: the key is the entry's.
	if _, err := acc.client.Publish(ctx, req); err != nil {
		t.Fatalf("re-send: %v", err)
	}
	if n := len(pds.ListPosts(t, acc.account.DID)); n != 1 {
		t.Errorf("%d records after a re-send, want 1", n)
	}
}

// testPNG is a small image, made here so no file is fetched.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 16, 8))
	for x := range 16 {
		for y := range 8 {
			img.Set(x, y, color.RGBA{uint8(x * 16), uint8(y * 32), 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A post with an image and its alt text: the record embeds the uploaded
// blob with the alt, and reading the post back gives the upload's media
// id, so a post's fingerprint matches its uploads'.
func TestPDSImageWithAltText(t *testing.T) {
	pds := pdstest.Start(t)
	acc := newPDSAccount(t, "", pds, "carol.test")
	ctx := ctxFor(t)
	data := testPNG(t)
	up, err := acc.client.UploadMedia(ctx, platform.MediaUpload{Handle: ledger.NewHandle(), Filename: "chart.png", ContentType: "image/png", Data: data, Alt: "A chart: sales up 20 % in November"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := acc.client.UploadMedia(ctx, platform.MediaUpload{Handle: ledger.NewHandle(), Filename: "chart.png", ContentType: "image/png", Data: data, Alt: "A chart: sales up 20 % in November"})
	if err != nil || again.RemoteID != up.RemoteID {
		t.Errorf("the same bytes uploaded again = %q, %v; want the same reference %q", again.RemoteID, err, up.RemoteID)
	}
	req := platform.PublishRequest{Handle: ledger.NewHandle(), Text: "November in one picture.", MediaIDs: []string{up.RemoteID}, CreatedAt: time.Now().UTC()}
	rcpt, err := acc.client.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	records := pds.ListPosts(t, acc.account.DID)
	if len(records) != 1 {
		t.Fatalf("%d records, want 1", len(records))
	}
	var stored postRecord
	if err := json.Unmarshal(records[0].Value, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Embed == nil || len(stored.Embed.Images) != 1 {
		t.Fatalf("stored record has no image embed: %s", records[0].Value)
	}
	got := stored.Embed.Images[0]
	if got.Alt != "A chart: sales up 20 % in November" || got.Image.MimeType != "image/png" || got.Image.Size != int64(len(data)) || got.Image.Ref.Link == "" {
		t.Errorf("embedded image = %+v", got)
	}
	rp, found, err := acc.client.Lookup(ctx, platform.LookupQuery{Handle: req.Handle, CreatedAt: req.CreatedAt})
	if err != nil || !found || rp.RemoteID != rcpt.RemoteID {
		t.Fatalf("Lookup = %v, %v", found, err)
	}
	if diff := cmp.Diff([]string{up.RemoteID}, rp.MediaIDs); diff != "" {
		t.Errorf("media ids read back (-uploaded +read):\n%s", diff)
	}
}

// Facets render: a link, a mention of another account on the PDS (its
// handle resolved to its DID) and a hashtag, at the right UTF-8 byte
// offsets in a text with multi-byte characters before them.
func TestPDSFacetsResolve(t *testing.T) {
	pds := pdstest.Start(t)
	dana := pds.CreateAccount(t, "dana.test", "pw-dana")
	acc := newPDSAccount(t, "", pds, "erin.test")
	ctx := ctxFor(t)
	text := "Grüße 👋 @dana.test — read https://example.com/notes?id=7. #oncepost"
	if _, err := acc.client.Publish(ctx, platform.PublishRequest{Handle: ledger.NewHandle(), Text: text, CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	records := pds.ListPosts(t, acc.account.DID)
	if len(records) != 1 {
		t.Fatalf("%d records, want 1", len(records))
	}
	var stored postRecord
	if err := json.Unmarshal(records[0].Value, &stored); err != nil {
		t.Fatal(err)
	}
	type rendered struct{ Span, Type, Value string }
	var got []rendered
	for _, f := range stored.Facets {
		span := text[f.Index.ByteStart:f.Index.ByteEnd]
		for _, ft := range f.Features {
			got = append(got, rendered{span, ft.Type, ft.URI + ft.DID + ft.Tag})
		}
	}
	want := []rendered{
		{"@dana.test", "app.bsky.richtext.facet#mention", dana.DID},
		{"https://example.com/notes?id=7", "app.bsky.richtext.facet#link", "https://example.com/notes?id=7"},
		{"#oncepost", "app.bsky.richtext.facet#tag", "oncepost"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("facets of the stored record (-want +got):\n%s", diff)
	}
}

// The PDS takes every text of the rich-text corpus that fits the limits
// with the facets the adapter writes: none of them breaks
// app.bsky.richtext.facet's lexicon, which the PDS checks on putRecord
// (the deviations from the reference client are for that).
func TestPDSTakesTheRichTextCorpus(t *testing.T) {
	pds := pdstest.Start(t)
	pds.CreateAccount(t, "bob.test", "pw-bob")
	acc := newPDSAccount(t, "", pds, "gina.test")
	ctx := ctxFor(t)
	sent := 0
	for _, c := range richTextCorpus {
		if checkText(c.text) != nil {
			continue
		}
		sent++
		if _, err := acc.client.Publish(ctx, platform.PublishRequest{Handle: ledger.NewHandle(), Text: c.text, CreatedAt: time.Now().UTC()}); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if got := len(pds.ListPosts(t, acc.account.DID)); got != sent {
		t.Errorf("%d records, want %d", got, sent)
	}
}

// refreshSession on the PDS rotates the refresh token; the new session
// works, and an unknown refresh token is refused as reconnect_needed.
func TestPDSRefreshRotates(t *testing.T) {
	pds := pdstest.Start(t)
	acc := newPDSAccount(t, "", pds, "frank.test")
	ctx := ctxFor(t)
	next, err := acc.client.Refresh(ctx, acc.client.cred)
	if err != nil {
		t.Fatal(err)
	}
	// The access JWT may come out the same within one second (same
	// claims); the refresh token is a new one every time.
	if next.AccessToken == "" || next.RefreshToken == "" || next.RefreshToken == acc.client.cred.RefreshToken {
		t.Fatalf("refresh did not rotate the refresh token")
	}
	c2, err := New(Config{BaseURL: pds.URL, DID: acc.account.DID, Credential: next})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Publish(ctx, platform.PublishRequest{Handle: ledger.NewHandle(), Text: "after a refresh", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatalf("publish with the refreshed session: %v", err)
	}
	bad := next
	bad.RefreshToken = "not-a-token"
	_, err = c2.Refresh(ctx, bad)
	var rej *platform.Rejected
	if !errors.As(err, &rej) || rej.Reason != platform.ReasonReconnectNeeded {
		t.Errorf("refresh with a bad token = %v, want Rejected %s", err, platform.ReasonReconnectNeeded)
	}
}
