package threads

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// TestLookupByCheckpoint reads the container's status first
// (https://developers.facebook.com/docs/threads/troubleshooting).
func TestLookupByCheckpoint(t *testing.T) {
	const text = "container post"
	fp := platform.Fingerprint(text, nil)
	tests := []struct {
		name      string
		setup     func(f *fakeThreads) (container, media string)
		want      outcome
		wantFound bool
	}{
		{
			name: "PUBLISHED and listed is found",
			setup: func(f *fakeThreads) (string, string) {
				c, m := f.publishedContainer(text)
				f.addPost("later", "TEXT_POST")
				return c, m
			},
			want: outcome{Class: "ok"}, wantFound: true,
		},
		{
			name: "PUBLISHED but not matched is inconclusive",
			setup: func(f *fakeThreads) (string, string) {
				c, _ := f.publishedContainer(text)
				f.mu.Lock()
				f.posts[0].text = "edited elsewhere"
				f.mu.Unlock()
				return c, ""
			},
			want: outcome{Class: "inconclusive"},
		},
		{"FINISHED is not found", func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusFinished), "" }, outcome{Class: "ok"}, false},
		{"EXPIRED is not found", func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusExpired), "" }, outcome{Class: "ok"}, false},
		{"ERROR is not found", func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusError), "" }, outcome{Class: "ok"}, false},
		{"IN_PROGRESS is not performed", func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusInProgress), "" }, outcome{Class: "not_performed", RetryAfter: time.Minute}, false},
		{"unreadable is inconclusive", func(*fakeThreads) (string, string) { return "17800000000000999", "" }, outcome{Class: "inconclusive"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			container, media := tt.setup(f)
			// A post with our text that is not ours: a container that says
			// FINISHED must win over it.
			if tt.want.Class == "ok" && !tt.wantFound {
				f.addPost(text, "TEXT_POST")
			}
			p, found, err := c.Lookup(context.Background(), platform.LookupQuery{Checkpoint: container, Fingerprint: fp, NotBefore: fixedNow})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if found != tt.wantFound {
				t.Fatalf("found = %v, want %v", found, tt.wantFound)
			}
			if found && p.RemoteID != media {
				t.Errorf("found %q, want %q", p.RemoteID, media)
			}
			reqs := f.seen()
			want := seenRequest{Method: "GET", Path: "/v1.0/" + container, Auth: "Bearer " + fakeToken,
				Query: url.Values{"fields": {"status,error_message"}}, Form: url.Values{}}
			if diff := cmp.Diff(want, reqs[0]); diff != "" {
				t.Errorf("status request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLookupByFingerprint reads GET /{user-id}/threads
// (https://developers.facebook.com/documentation/threads/reference/user:
// fields, since as a Unix time, limit up to 100, after cursor).
func TestLookupByFingerprint(t *testing.T) {
	const ours = "Our post\r\nwith two lines  "
	fp := platform.Fingerprint(ours, nil)

	t.Run("found since NotBefore, request shape", func(t *testing.T) {
		f, c := fakeClient(t)
		f.addPost("Our post\nwith two lines", "IMAGE") // same text with an image: not ours
		id := f.addPost("Our post\nwith two lines", "TEXT_POST")
		f.addPost("Our post\nwith two lines", "REPOST_FACADE")
		f.addPost("something else", "TEXT_POST")
		p, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, NotBefore: fixedNow})
		outcomeOf(t, err)
		if err != nil || !found || p.RemoteID != id {
			t.Fatalf("Lookup = %+v, %v, %v; want %s", p, found, err, id)
		}
		req := f.seen()[0]
		want := seenRequest{Method: "GET", Path: "/v1.0/5150/threads", Auth: "Bearer " + fakeToken, Form: url.Values{}, Query: url.Values{
			"fields": {"id,media_type,text,timestamp,permalink,children"},
			"limit":  {"100"},
			"since":  {strconv.FormatInt(fixedNow.Unix(), 10)},
		}}
		if diff := cmp.Diff(want, req); diff != "" {
			t.Errorf("list request (-want +got):\n%s", diff)
		}
	})

	t.Run("absent in a window read to its end", func(t *testing.T) {
		f, c := fakeClient(t)
		for i := range 150 {
			f.addPost(fmt.Sprintf("post %d", i), "TEXT_POST")
		}
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, NotBefore: fixedNow})
		if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
		}
		if n := f.callCount("list"); n != 2 {
			t.Errorf("read %d pages, want 2", n)
		}
		if after := f.seen()[1].Query.Get("after"); after != "cur-100" {
			t.Errorf("second page after=%q, want the first page's cursor", after)
		}
	})

	t.Run("window deeper than the bound is inconclusive", func(t *testing.T) {
		f, c := fakeClient(t)
		for i := range lookupDepth + 5 {
			f.addPost(fmt.Sprintf("post %d", i), "TEXT_POST")
		}
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, NotBefore: fixedNow})
		if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
		}
	})

	t.Run("after: reaching the mark proves absence, older posts are not read", func(t *testing.T) {
		f, c := fakeClient(t)
		f.addPost(ours, "TEXT_POST") // older than the mark: a post of another day
		mark := f.addPost("the newest before the first send", "TEXT_POST")
		f.addPost("newer", "TEXT_POST")
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, After: mark})
		if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
		}
		if since := f.seen()[0].Query.Get("since"); since != "" {
			t.Errorf("after-based lookup sent since=%s; timestamps play no part", since)
		}
	})

	t.Run("after: found above the mark", func(t *testing.T) {
		f, c := fakeClient(t)
		mark := f.addPost("the newest before the first send", "TEXT_POST")
		id := f.addPost(ours, "TEXT_POST")
		p, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, After: mark})
		outcomeOf(t, err)
		if err != nil || !found || p.RemoteID != id {
			t.Errorf("Lookup = %+v, %v, %v; want %s", p, found, err, id)
		}
	})

	t.Run("after: mark beyond the cap is inconclusive", func(t *testing.T) {
		f, c := fakeClient(t)
		mark := f.addPost("mark", "TEXT_POST")
		for i := range lookupAfterCap {
			f.addPost(fmt.Sprintf("post %d", i), "TEXT_POST")
		}
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, After: mark})
		if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
		}
	})

	t.Run("start of history reads to the first post", func(t *testing.T) {
		f, c := fakeClient(t)
		f.addPost("only", "TEXT_POST")
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, After: platform.StartOfHistory})
		if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
		}
	})

	t.Run("read failure is not performed", func(t *testing.T) {
		f := newFake(t)
		f.before = func(route string, w http.ResponseWriter, _ *http.Request) bool {
			if route == "list" {
				graphErr(w, http.StatusInternalServerError, 2, 0, "OAuthException", "Service temporarily unavailable")
				return true
			}
			return false
		}
		srv := newServer(t, f)
		_, found, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp})
		if diff := cmp.Diff(outcome{Class: "not_performed", Status: 500}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
		}
		if n := f.callCount("list"); n < 2 {
			t.Errorf("a failing read was tried %d times, want retries", n)
		}
	})

	t.Run("throttled read is not performed with the wait", func(t *testing.T) {
		f := newFake(t)
		f.before = func(route string, w http.ResponseWriter, _ *http.Request) bool {
			if route == "list" {
				graphErr(w, http.StatusBadRequest, 4, 0, "OAuthException", "Application request limit reached")
				return true
			}
			return false
		}
		srv := newServer(t, f)
		_, _, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp})
		if diff := cmp.Diff(outcome{Class: "not_performed", Status: 400, RetryAfter: time.Hour}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})

	t.Run("no fingerprint and no checkpoint", func(t *testing.T) {
		_, c := fakeClient(t)
		if _, _, err := c.Lookup(context.Background(), platform.LookupQuery{}); err == nil {
			t.Error("Lookup without fingerprint or checkpoint succeeded")
		}
	})
}

func TestRecent(t *testing.T) {
	f, c := fakeClient(t)
	var ids []string
	for i := range 130 {
		ids = append(ids, f.addPost(fmt.Sprintf("post %d", i), "TEXT_POST"))
	}
	f.addPost("a repost", "REPOST_FACADE")
	got, err := c.Recent(context.Background(), 120)
	if err != nil {
		t.Fatalf("Recent: %v", err)
	}
	if len(got) != 120 {
		t.Fatalf("Recent returned %d posts, want 120", len(got))
	}
	if got[0].RemoteID != ids[129] || got[119].RemoteID != ids[10] {
		t.Errorf("Recent = %s … %s, want newest first from %s", got[0].RemoteID, got[119].RemoteID, ids[129])
	}
	if got[0].Text != "post 129" || got[0].URL == "" || got[0].CreatedAt.IsZero() {
		t.Errorf("Recent[0] = %+v", got[0])
	}
	if empty, err := c.Recent(context.Background(), 0); err != nil || len(empty) != 0 {
		t.Errorf("Recent(0) = %v, %v", empty, err)
	}
}

// TestExists reads GET /{media-id}?fields=id
// (https://developers.facebook.com/docs/threads/threads-media).
func TestExists(t *testing.T) {
	f := newFake(t)
	id := f.addPost("here", "TEXT_POST")
	f.before = func(route string, w http.ResponseWriter, r *http.Request) bool {
		switch {
		case route == "get" && strings.HasSuffix(r.URL.Path, "/broken"):
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Tried accessing nonexisting field (fieldx)")
			return true
		case route == "get" && strings.HasSuffix(r.URL.Path, "/down"):
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	tests := []struct {
		id     string
		exists bool
		want   outcome
	}{
		{id, true, outcome{Class: "ok"}},
		{"18000000000000404", false, outcome{Class: "ok"}},
		{"broken", false, outcome{Class: "rejected", Status: 400, Reason: ReasonInvalidParameter}},
		{"down", false, outcome{Class: "not_performed", Status: 503}},
	}
	for _, tt := range tests {
		got, err := c.Exists(context.Background(), tt.id)
		if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" || got != tt.exists {
			t.Errorf("Exists(%s) = %v, want %v; outcome (-want +got):\n%s", tt.id, got, tt.exists, diff)
		}
	}
	req := f.seen()[0]
	if req.Path != "/v1.0/"+id || req.Query.Get("fields") != "id" || req.Auth != "Bearer "+fakeToken {
		t.Errorf("exists request %+v", req)
	}
}

func TestProfile(t *testing.T) {
	_, c := fakeClient(t)
	p, err := c.Profile(context.Background())
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if diff := cmp.Diff(Profile{ID: fakeUserID, Username: "oncepost_test"}, p); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
}
