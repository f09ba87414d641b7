package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The publishers take the jobs a burst makes visible in one receive (one
// write transaction), as many as there are idle workers, not one receive
// per job; and they publish them at once, never more than Workers at a
// time.
func TestPublishersReceiveForEveryIdleWorker(t *testing.T) {
	const workers, jobs = 4, 8
	w := newWorkspace(t, sandbox.Options{}, 1)
	for range jobs {
		w.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 200 * time.Millisecond})
	}
	ctx := context.Background()
	rec := &receiveRecorder{}
	flight := &inFlight{}
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir, cfg.Logger, cfg.Metrics = w.db, t.TempDir(), discardLogger(), discardWriter{}
	cfg.Workers, cfg.SweepEvery = workers, time.Hour
	cfg.Platforms = countingPlatforms{mastodon.Connector{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret}, flight}
	cfg.wrap = func(p ports) ports {
		rec.Queue = p.queue
		p.queue = rec
		return p
	}
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	slot := time.Now().UTC()
	for i := range jobs {
		p := post.Post{ID: post.ID(fmt.Sprintf("p%d", i)), Body: fmt.Sprintf("Due now, number %d.", i), CreatedAt: slot,
			Targets: []post.Target{{Account: w.accounts[0], Slot: slot, Status: post.Scheduled, UpdatedAt: slot}}}
		if err := rt.store.CreatePost(ctx, p); err != nil {
			t.Fatal(err)
		}
		if sent, err := rt.trigger.Enqueue(ctx, publishing.TargetRef{Post: p.ID, Account: w.accounts[0], Slot: slot}); err != nil || !sent {
			t.Fatalf("enqueue %s: %v %v", p.ID, sent, err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.run(runCtx) }()
	deadline, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ok := waitUntil(deadline, 10*time.Millisecond, func() bool {
		n, err := rt.store.CountTargets(ctx, post.Published)
		return err == nil && n[post.Published] == jobs
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("%d of %d jobs published", w.sb.Stats().Committed, jobs)
	}
	type seen struct {
		FirstReceive receive
		MaxInFlight  int
		Creates      int
	}
	got := seen{FirstReceive: rec.firstNonEmpty(), MaxInFlight: int(flight.max.Load()), Creates: w.sb.Stats().CreateRequests}
	want := seen{FirstReceive: receive{Asked: workers, Got: workers}, MaxInFlight: workers, Creates: jobs}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first receive with jobs, creates in flight at once, creates (-want +got):\n%s", diff)
	}
}

// receive is one Receive call: how many messages it asked for and got.
type receive struct{ Asked, Got int }

// receiveRecorder records every Receive of the queue it wraps.
type receiveRecorder struct {
	publishing.Queue
	mu    sync.Mutex
	calls []receive
}

func (r *receiveRecorder) Receive(ctx context.Context, max int, visibility time.Duration) ([]publishing.Message, error) {
	msgs, err := r.Queue.Receive(ctx, max, visibility)
	r.mu.Lock()
	r.calls = append(r.calls, receive{max, len(msgs)})
	r.mu.Unlock()
	return msgs, err
}

func (r *receiveRecorder) firstNonEmpty() receive {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c.Got > 0 {
			return c
		}
	}
	return receive{}
}

// inFlight counts the creates in flight and the most at once.
type inFlight struct{ now, max atomic.Int32 }

// countingPlatforms wraps the platforms' clients to count creates in flight.
type countingPlatforms struct {
	publishing.Platforms
	f *inFlight
}

func (c countingPlatforms) Client(ctx context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	cl, err := c.Platforms.Client(ctx, a, cred)
	return countingClient{cl, c.f}, err
}

type countingClient struct {
	platform.Client
	f *inFlight
}

func (c countingClient) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	n := c.f.now.Add(1)
	defer c.f.now.Add(-1)
	for m := c.f.max.Load(); n > m && !c.f.max.CompareAndSwap(m, n); m = c.f.max.Load() {
	}
	return c.Client.Publish(ctx, req)
}

// The platforms' HTTP transport keeps a connection per worker to a host:
// a burst's second wave of calls reuses the first wave's connections
// instead of dialling (and, on a real platform, a TLS handshake) again.
func TestPlatformTransportKeepsAConnectionPerWorker(t *testing.T) {
	const workers = 8
	var dialled atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond) // every call of a wave in flight at once
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	hc := &http.Client{Transport: platformTransport(workers)}
	wave := func() {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				resp, err := hc.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	wave()
	wave()
	if got := dialled.Load(); got != workers {
		t.Errorf("two waves of %d calls dialled %d connections, want %d", workers, got, workers)
	}
}
