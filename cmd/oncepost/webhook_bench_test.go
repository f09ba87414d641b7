package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/webhook"
)

// BenchmarkWebhookLag measures the time from a target's change to
// published (its transaction committed, the event recorded with it) to
// the webhook's arrival at a receiver on 127.0.0.1, through the embedded
// runtime's notifier as `oncepost run` wires it: woken by the commit,
// signing, one HTTP request per delivery. Changes come one every
// millisecond from one writer, as the publishers' outcomes would.
// Reported: lag p50 and p99 in ms (target p99 ≤ 1 s) and deliveries/s.
func BenchmarkWebhookLag(b *testing.B) {
	dir := b.TempDir()
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger = filepath.Join(dir, "oncepost.db"), discardLogger()
	rt, err := openRuntime(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		mu      sync.Mutex
		arrived = map[string]time.Time{}
		all     = make(chan struct{})
	)
	want := b.N
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		mu.Lock()
		if _, dup := arrived[r.Header.Get("webhook-id")]; !dup {
			arrived[r.Header.Get("webhook-id")] = at
			if len(arrived) == want {
				close(all)
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	secret, err := webhook.NewSecret()
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.store.AddSubscription(ctx, publishing.Subscription{ID: "wh_bench", URL: rcv.URL + "/hooks", Secret: secret,
		Events: []publishing.EventType{publishing.EventPublished}, AllowPrivate: true, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	acc := post.Account{ID: "bench", Platform: "sandbox", Handle: "@bench", BaseURL: "http://127.0.0.1:1", Gate: post.GateAuto}
	if err := rt.store.PutAccount(ctx, acc); err != nil {
		b.Fatal(err)
	}
	slot := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	for i := range b.N {
		p := post.Post{ID: post.ID(fmt.Sprintf("lag%06d", i)), Body: "lag", CreatedAt: time.Now().UTC(),
			Targets: []post.Target{{Account: acc.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: time.Now().UTC()}}}
		if err := rt.store.CreatePost(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.notifier.Run(ctx, webhookPoll, rt.store.EventsWritten())
	}()

	changed := make(map[string]time.Time, b.N)
	b.ResetTimer()
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	for i := range b.N {
		<-tick.C
		id := post.ID(fmt.Sprintf("lag%06d", i))
		t, err := rt.store.UpdateTarget(ctx, id, acc.ID, post.TargetUpdate{Status: post.Published, RemoteID: fmt.Sprint(i), At: time.Now().UTC()})
		committed := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		e, ok := publishing.TargetEvent(id, post.Target{Status: post.Scheduled}, t)
		if !ok {
			b.Fatal("no event for a move to published")
		}
		changed[e.ID] = committed
	}
	tick.Stop()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		b.Fatalf("%d of %d webhooks arrived within 30 s", n, b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	<-done

	mu.Lock()
	defer mu.Unlock()
	lags := make([]time.Duration, 0, b.N)
	for id, at := range changed {
		got, ok := arrived[id]
		if !ok {
			b.Fatalf("event %s never arrived", id)
		}
		lags = append(lags, got.Sub(at))
	}
	slices.Sort(lags)
	b.ReportMetric(ms(lags[len(lags)/2]), "lag-p50-ms")
	b.ReportMetric(ms(lags[min(len(lags)-1, len(lags)*99/100)]), "lag-p99-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
