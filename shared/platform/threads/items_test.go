package threads

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/platform"
)

// itemsOf is the checkpoint of a carousel's item containers.
func itemsOf(ids []string) string { return "items:" + strings.Join(ids, ",") }

// statusReads are the container ids whose status the fake was asked for,
// in order.
func statusReads(f *fakeThreads) []string {
	var out []string
	for _, r := range f.seen() {
		if r.Method == http.MethodGet && r.Query.Get("fields") == "status,error_message" {
			out = append(out, strings.TrimPrefix(r.Path, "/v1.0/"))
		}
	}
	return out
}

// TestPublishCarouselSlowItems: a carousel whose items are still
// processing when the call's wait ends is NotPerformed for a minute with
// the items recorded ("items:…"); the next attempts resume those items
// and never make new ones: one still processing is NotPerformed again
// with nothing made or recorded, one that finishes makes the CAROUSEL
// container of exactly those items, in order, records it and publishes
// once.
func TestPublishCarouselSlowItems(t *testing.T) {
	const text = "slow album"
	f, c := fakeClient(t)
	f.itemProcessingReads = 1 << 30
	c.poll.budget = 30 * time.Millisecond
	cp := &recorder{f: f}
	req := platform.PublishRequest{Text: text, Media: images(3), Checkpoint: cp.checkpoint}

	_, err := c.Publish(context.Background(), req)
	if diff := cmp.Diff(outcome{Class: "not_performed", RetryAfter: time.Minute}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("first call (-want +got):\n%s", diff)
	}
	items := f.madeContainers()
	if f.madeOf("item") != 3 || f.madeOf("CAROUSEL") != 0 || f.callCount("publish") != 0 {
		t.Fatalf("first call made %d items and %d carousels, sent %d publishes; want 3, 0, 0", f.madeOf("item"), f.madeOf("CAROUSEL"), f.callCount("publish"))
	}
	if diff := cmp.Diff([]string{itemsOf(items)}, cp.handles); diff != "" {
		t.Fatalf("first call's checkpoints (-want +got):\n%s", diff)
	}

	req.Resume = cp.handles[0]
	reads := len(statusReads(f))
	_, err = c.Publish(context.Background(), req)
	if diff := cmp.Diff(outcome{Class: "not_performed", RetryAfter: time.Minute}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("resume while processing (-want +got):\n%s", diff)
	}
	if containers, _, _ := f.counts(); containers != 3 || len(cp.handles) != 1 || f.callCount("publish") != 0 {
		t.Fatalf("resume while processing: %d containers in all, checkpoints %v, %d publishes; want 3, the items only, 0", containers, cp.handles, f.callCount("publish"))
	}
	if n := len(statusReads(f)) - reads; n < 4 {
		t.Errorf("resume while processing read %d statuses, want each item read and the slow one polled", n)
	}

	// They finish after two more reads each: the resume polls them.
	for _, id := range items {
		f.setProcessing(id, 2)
	}
	c.poll.budget = 5 * time.Second
	r, err := c.Publish(context.Background(), req)
	if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("resume once finished (-want +got):\n%s", diff)
	}
	made := f.madeContainers()
	if f.madeOf("item") != 3 || f.madeOf("CAROUSEL") != 1 || len(made) != 4 {
		t.Fatalf("made %d items and %d carousels (%v), want the 3 first items and 1 carousel", f.madeOf("item"), f.madeOf("CAROUSEL"), made)
	}
	carousel := made[3]
	if diff := cmp.Diff(items, f.container(carousel).children); diff != "" {
		t.Errorf("carousel children (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{itemsOf(items), carousel}, cp.handles); diff != "" {
		t.Errorf("checkpoints (-want +got):\n%s", diff)
	}
	if n := f.callCount("publish"); n != 1 {
		t.Errorf("threads_publish sent %d times, want 1", n)
	}
	if r.RemoteID == "" || r.RemoteID != f.container(carousel).mediaID || len(f.post(r.RemoteID).children) != 3 {
		t.Errorf("receipt %q, want the carousel's post with 3 children", r.RemoteID)
	}
}

// TestPublishResumeItems: what a Resume of recorded items does, by their
// statuses (https://developers.facebook.com/docs/threads/troubleshooting):
// all FINISHED make the carousel of them; fewer than the images (a prefix
// recorded by a call that ran out of time) are kept when FINISHED or
// still processing, and only the missing items are made; an EXPIRED or
// unreadable one, or more items than images, starts over with new items
// (none was published: a carousel is only published once its own id is
// recorded); an ERROR one is Rejected with Meta's error_message, as a
// container that fails while awaited; a PUBLISHED one, or a checkpoint
// this adapter cannot have written, is Ambiguous and nothing is sent.
func TestPublishResumeItems(t *testing.T) {
	const text = "resumed items"
	tests := []struct {
		name string
		// setup returns the checkpoint to resume and its item ids.
		setup func(f *fakeThreads) (resume string, old []string)
		want  outcome
		// keep: how many old items are the carousel's first children,
		// the rest new (0: started over), when the outcome is ok.
		keep int
		// readsOld: the old items' statuses are read.
		readsOld bool
	}{
		{"all FINISHED: the carousel of them", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished, StatusFinished, StatusFinished)
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 3, true},
		{"one EXPIRED: start over", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished, StatusExpired, StatusFinished)
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 0, true},
		{"one EXPIRED, one still processing: start over at once", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusInProgress, StatusFinished, StatusExpired)
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 0, true},
		{"one unreadable: start over", func(f *fakeThreads) (string, []string) {
			ids := append(f.addItemContainers(StatusFinished, StatusFinished), "17899999999999")
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 0, true},
		{"two of three recorded: the third is made", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished, StatusFinished)
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 2, true},
		{"one of three recorded, still processing: kept", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished)
			f.finishAfter(ids[0], 2)
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 1, true},
		{"two of three recorded, one EXPIRED: start over", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished, StatusExpired)
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 0, true},
		{"four items for three images: start over", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished, StatusFinished, StatusFinished, StatusFinished)
			return itemsOf(ids), ids
		}, outcome{Class: "ok"}, 0, false},
		{"one ERROR: rejected", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished, StatusError, StatusExpired)
			return itemsOf(ids), ids
		}, outcome{Class: "rejected", Reason: ReasonMediaFailed}, 0, true},
		{"two of three recorded, one ERROR: rejected", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusError, StatusFinished)
			return itemsOf(ids), ids
		}, outcome{Class: "rejected", Reason: ReasonMediaFailed}, 0, true},
		{"one PUBLISHED: ambiguous", func(f *fakeThreads) (string, []string) {
			ids := f.addItemContainers(StatusFinished, StatusFinished, StatusPublished)
			return itemsOf(ids), ids
		}, outcome{Class: "ambiguous"}, 0, true},
		{"not written by this adapter: ambiguous", func(*fakeThreads) (string, []string) {
			return "items:17800000000001,,17800000000002", nil
		}, outcome{Class: "ambiguous"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			resume, old := tt.setup(f)
			cp := &recorder{f: f}
			r, err := c.Publish(context.Background(), platform.PublishRequest{Text: text, Media: images(3), Resume: resume, Checkpoint: cp.checkpoint})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if tt.want.Class == "rejected" && !strings.Contains(err.Error(), f.brokenMessage) {
				t.Errorf("error %q does not carry Meta's error_message", err)
			}
			read := map[string]bool{}
			for _, id := range statusReads(f) {
				read[id] = true
			}
			for _, id := range old {
				if read[id] != tt.readsOld {
					t.Errorf("status of old item %s read: %v, want %v", id, read[id], tt.readsOld)
				}
			}
			if tt.want.Class != "ok" {
				if containers, published, _ := f.counts(); containers != 0 || published != 0 || len(cp.handles) != 0 {
					t.Errorf("made %d containers and %d posts, checkpoints %v; want nothing", containers, published, cp.handles)
				}
				return
			}
			made := f.madeContainers()
			carousel := made[len(made)-1]
			children := append(slices.Clone(old[:tt.keep]), made[:3-tt.keep]...)
			wantHandles := []string{itemsOf(children), carousel}
			if tt.keep == 3 {
				wantHandles = []string{carousel}
			}
			if f.madeOf("item") != 3-tt.keep || f.madeOf("CAROUSEL") != 1 || len(made) != 4-tt.keep {
				t.Errorf("made %d items and %d carousels (%v), want %d and 1", f.madeOf("item"), f.madeOf("CAROUSEL"), made, 3-tt.keep)
			}
			if diff := cmp.Diff(children, f.container(carousel).children); diff != "" {
				t.Errorf("carousel children (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantHandles, cp.handles); diff != "" {
				t.Errorf("checkpoints (-want +got):\n%s", diff)
			}
			if f.callCount("publish") != 1 || r.RemoteID != f.container(carousel).mediaID {
				t.Errorf("%d publishes, receipt %q; want 1, the carousel's post", f.callCount("publish"), r.RemoteID)
			}
		})
	}
}

// TestPublishCarouselOutOfTime: a carousel whose items take longer to
// make than one call allows is made over several attempts. Before each
// item's creation the call checks that its deadline leaves time for that
// creation and for threads_publish (poll.reserve); when it does not, the
// items made so far are recorded ("items:…", a prefix in display order)
// and the call is NotPerformed for a minute without sending the next
// creation, so that no creation is cut off by the deadline (Ambiguous,
// with nothing recorded, on every attempt). Each later attempt keeps the
// recorded prefix and makes only the missing items: one item per image
// in all, the carousel of them in order, published once.
func TestPublishCarouselOutOfTime(t *testing.T) {
	const (
		text = "big album"
		n    = 6
		// Each item creation takes itemTime; a call has callTime, and
		// keeps reserve for threads_publish: the first call makes 3
		// items, with a margin of itemTime/2 either side.
		itemTime = 200 * time.Millisecond
		callTime = 900 * time.Millisecond
		reserve  = 200 * time.Millisecond
	)
	f, c := fakeClient(t)
	f.slowItemCreates(itemTime)
	c.poll.reserve = reserve
	cp := &recorder{f: f}
	req := platform.PublishRequest{Text: text, Media: images(n), Checkpoint: cp.checkpoint}

	_, err := c.Publish(shortCtx(t, callTime), req)
	if diff := cmp.Diff(outcome{Class: "not_performed", RetryAfter: time.Minute}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("first call (-want +got):\n%s", diff)
	}
	first := f.madeContainers()
	if len(first) == 0 || len(first) >= n || f.madeOf("item") != len(first) {
		t.Fatalf("first call made %v (%d items); want some of the %d items, not all", first, f.madeOf("item"), n)
	}
	if sent := f.callCount("create"); sent != len(first) {
		t.Errorf("first call sent %d creations and made %d: it sent one it could not see through", sent, len(first))
	}
	if diff := cmp.Diff([]string{itemsOf(first)}, cp.handles); diff != "" {
		t.Fatalf("first call's checkpoints (-want +got):\n%s", diff)
	}

	var r platform.Receipt
	for attempt := 2; ; attempt++ {
		if attempt > 10 {
			t.Fatalf("not published after %d attempts; checkpoints %v", attempt-1, cp.handles)
		}
		req.Resume = cp.handles[len(cp.handles)-1]
		r, err = c.Publish(shortCtx(t, callTime), req)
		o := outcomeOf(t, err)
		if o.Class == "ok" {
			break
		}
		if diff := cmp.Diff(outcome{Class: "not_performed", RetryAfter: time.Minute}, o); diff != "" {
			t.Fatalf("attempt %d (-want +got):\n%s", attempt, diff)
		}
	}
	made := f.madeContainers()
	if f.madeOf("item") != n || f.madeOf("CAROUSEL") != 1 || len(made) != n+1 || f.callCount("create") != n+1 {
		t.Fatalf("made %d items and %d carousels on %d creations (%v); want %d items and 1 carousel, each sent once", f.madeOf("item"), f.madeOf("CAROUSEL"), f.callCount("create"), made, n)
	}
	items, carousel := made[:n], made[n]
	if diff := cmp.Diff(items, f.container(carousel).children); diff != "" {
		t.Errorf("carousel children (-want +got):\n%s", diff)
	}
	// Every items checkpoint is a longer prefix of the items than the one
	// before, the last all of them; then the carousel.
	last := len(cp.handles) - 1
	if cp.handles[last] != carousel || cp.handles[last-1] != itemsOf(items) {
		t.Errorf("checkpoints %v, want the items, then the carousel %s", cp.handles, carousel)
	}
	prev := 0
	for _, h := range cp.handles[:last] {
		ids, isItems, err := parseItems(h)
		if !isItems || err != nil || len(ids) <= prev || !slices.Equal(ids, items[:len(ids)]) {
			t.Errorf("checkpoint %q is not a longer prefix of %v than the one before", h, items)
			continue
		}
		prev = len(ids)
	}
	if f.callCount("publish") != 1 || r.RemoteID != f.container(carousel).mediaID {
		t.Errorf("%d publishes, receipt %q; want 1, the carousel's post", f.callCount("publish"), r.RemoteID)
	}
}

// TestPublishCarouselCheckpointFails: a checkpoint that cannot be
// recorded stops Publish: the items' (nothing is sent after the last
// item, not even a status read) and, after resumed items, the
// carousel's (it is never awaited nor published).
func TestPublishCarouselCheckpointFails(t *testing.T) {
	ledgerDown := &platform.NotPerformed{Message: "record the platform's handle before publishing: ledger: conditional update failed"}
	t.Run("items", func(t *testing.T) {
		f, c := fakeClient(t)
		var tried []string
		_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Media: images(3), Checkpoint: func(_ context.Context, h string) error {
			tried = append(tried, h)
			return ledgerDown
		}})
		recordErr(err)
		if !errors.Is(err, ledgerDown) {
			t.Errorf("Publish error %v does not wrap the checkpoint's", err)
		}
		made := f.madeContainers()
		if diff := cmp.Diff([]string{itemsOf(made)}, tried); diff != "" || len(made) != 3 {
			t.Errorf("made %v; checkpoints tried (-want +got):\n%s", made, diff)
		}
		reqs := f.seen()
		if last := reqs[len(reqs)-1]; len(reqs) != 3 || last.Form.Get("is_carousel_item") != "true" {
			t.Errorf("%d requests, the last %s %s %v; want the 3 item creates and nothing after", len(reqs), last.Method, last.Path, last.Form)
		}
	})
	t.Run("carousel after resumed items", func(t *testing.T) {
		f, c := fakeClient(t)
		items := f.addItemContainers(StatusFinished, StatusFinished)
		_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Media: images(2), Resume: itemsOf(items), Checkpoint: func(context.Context, string) error {
			return ledgerDown
		}})
		recordErr(err)
		if !errors.Is(err, ledgerDown) {
			t.Errorf("Publish error %v does not wrap the checkpoint's", err)
		}
		if f.madeOf("item") != 0 || f.madeOf("CAROUSEL") != 1 || f.callCount("publish") != 0 {
			t.Errorf("made %d items and %d carousels, %d publishes; want 0, 1, 0", f.madeOf("item"), f.madeOf("CAROUSEL"), f.callCount("publish"))
		}
		if diff := cmp.Diff(items, statusReads(f), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("status reads (-want +got), want the items' only, in any order:\n%s", diff)
		}
	})
}

// TestLookupItemsCheckpoint: a checkpoint of item containers means no
// carousel was published under it (a carousel is published only after
// its own id is recorded), so Lookup answers not found without a request,
// even with a thread of the same text and image count listed; one this
// adapter cannot have written is Inconclusive.
func TestLookupItemsCheckpoint(t *testing.T) {
	const text = "album looked for"
	tests := []struct {
		name       string
		checkpoint func(f *fakeThreads) string
		want       outcome
	}{
		{"recorded items", func(f *fakeThreads) string {
			return itemsOf(f.addItemContainers(StatusFinished, StatusInProgress, StatusFinished))
		}, outcome{Class: "ok"}},
		{"an empty id", func(*fakeThreads) string { return "items:17800000000001,,17800000000003" }, outcome{Class: "inconclusive"}},
		{"no ids", func(*fakeThreads) string { return "items:" }, outcome{Class: "inconclusive"}},
		{"a repeated id", func(*fakeThreads) string { return "items:17800000000001,17800000000001,17800000000003" }, outcome{Class: "inconclusive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			f.addMediaPost(text, 3)
			cp := tt.checkpoint(f)
			before := len(f.seen())
			_, found, err := c.Lookup(context.Background(), platform.LookupQuery{
				Checkpoint: cp, Fingerprint: mediaFingerprint(text, 3), Text: text, MediaCount: 3, NotBefore: fixedNow,
			})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" || found {
				t.Fatalf("found %v, outcome (-want +got):\n%s", found, diff)
			}
			if n := len(f.seen()) - before; n != 0 {
				t.Errorf("Lookup sent %d requests, want none", n)
			}
		})
	}
}

// TestPublishItemsCheckpointOtherPosts: a checkpoint of items resumed by
// a post that is not a carousel (one image, or text only; the adapter
// never records items for them) starts over without reading the items:
// no post was published under them.
func TestPublishItemsCheckpointOtherPosts(t *testing.T) {
	tests := []struct {
		name  string
		media []platform.MediaUpload
		kind  string
	}{
		{"one image", images(1), "IMAGE"},
		{"text only", nil, "TEXT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			items := f.addItemContainers(StatusError)
			cp := &recorder{f: f}
			_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "not a carousel", Media: tt.media, Resume: itemsOf(items), Checkpoint: cp.checkpoint})
			if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			made := f.madeContainers()
			if len(made) != 1 || f.madeOf(tt.kind) != 1 || f.callCount("publish") != 1 {
				t.Errorf("made %v (%d %s), %d publishes; want one %s container, published", made, f.madeOf(tt.kind), tt.kind, f.callCount("publish"), tt.kind)
			}
			if diff := cmp.Diff(made, cp.handles); diff != "" {
				t.Errorf("checkpoints (-want +got):\n%s", diff)
			}
			for _, id := range statusReads(f) {
				if id == items[0] {
					t.Errorf("the item %s was read", id)
				}
			}
		})
	}
}

// A resume reads the saved items' statuses side by side, not one after
// another: read one by one, a big carousel's reads alone could use up a
// call's time for items. The fake holds each status read until another
// is in flight (or 2 s pass, which only one-by-one reads wait for).
func TestResumeReadsItemStatusesSideBySide(t *testing.T) {
	f, c := fakeClient(t)
	items := f.addItemContainers(StatusFinished, StatusFinished, StatusFinished, StatusFinished)
	var (
		mu             sync.Mutex
		inFlight, most int
		together       = make(chan struct{})
		closeOnce      sync.Once
	)
	f.before = func(route string, _ http.ResponseWriter, _ *http.Request) bool {
		if route != "get" {
			return false
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight >= 2 {
			closeOnce.Do(func() { close(together) })
		}
		mu.Unlock()
		select {
		case <-together:
		case <-time.After(2 * time.Second):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return false
	}
	if _, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Media: images(4), Resume: itemsOf(items), Checkpoint: func(context.Context, string) error { return nil }}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if most < 2 {
		t.Errorf("at most %d status reads in flight at once, want the items read side by side", most)
	}
	if f.madeOf("item") != 0 || f.callCount("publish") != 1 {
		t.Errorf("made %d items, %d publishes; want 0 and 1", f.madeOf("item"), f.callCount("publish"))
	}
}
