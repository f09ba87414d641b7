package main

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// receiveBatch bounds one receive of the publishers: the jobs of a receive
// start when its transaction commits, so a burst is taken in steps that
// let the first jobs start while the next are received.
const receiveBatch = 100

// publisherIdle bounds the receiver's sleep when no job is visible: a job
// sent with no delay (the sweeper's, one put back) waits at most this.
const publisherIdle = 250 * time.Millisecond

// minIdleWait is the receiver's shortest sleep: a job visible already but
// not received (another process took it meanwhile) is looked for again
// after it, not in a busy loop.
const minIdleWait = time.Millisecond

// publish runs the publisher workers until ctx is done, then waits for the
// jobs in flight (their outcomes are recorded; see publishing.Loop.Run).
// One receiver takes as many jobs as there are idle workers (at most
// receiveBatch) in one receive, one write transaction, and each job is
// handled on its own goroutine (publishing.Loop.Handle: publish, then
// ack, retry or dead-letter), at most Workers at once. When no job is
// visible, the receiver sleeps until the queue's next one is (a burst
// fired FireLead early is received at its slot), at most publisherIdle:
// idle, the runtime polls once, whatever the number of workers.
func (rt *runtime) publish(ctx context.Context) error {
	loop := rt.newLoop()
	idle := make(chan struct{}, rt.cfg.Workers)
	for range rt.cfg.Workers {
		idle <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-idle:
		}
		n := 1
	more:
		for n < receiveBatch {
			select {
			case <-idle:
				n++
			default:
				break more
			}
		}
		msgs, err := rt.ports.queue.Receive(ctx, n, rt.cfg.Visibility)
		for range n - len(msgs) {
			idle <- struct{}{}
		}
		for _, m := range msgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { idle <- struct{}{} }()
				if err := loop.Handle(context.WithoutCancel(ctx), m); err != nil {
					rt.log.ErrorContext(ctx, "publisher", "err", err)
				}
			}()
		}
		switch {
		case err != nil:
			if ctx.Err() == nil {
				rt.log.ErrorContext(ctx, "publisher receive", "err", err)
			}
			sleep(ctx, publisherIdle)
		case len(msgs) < n:
			next, ok, err := rt.queue.NextVisible(ctx)
			if err != nil {
				if ctx.Err() == nil {
					rt.log.ErrorContext(ctx, "publisher: next visible job", "err", err)
				}
				ok = false
			}
			sleep(ctx, idleWait(rt.now(), next, ok, publisherIdle))
		}
	}
}

// idleWait is how long the receiver sleeps once no job is visible: until
// the next one is (next, if ok), at least minIdleWait, at most idle.
func idleWait(now, next time.Time, ok bool, idle time.Duration) time.Duration {
	if !ok {
		return idle
	}
	return min(max(next.Sub(now), minIdleWait), idle)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// platformTransport is the HTTP transport of the platform adapters: the
// default one, keeping up to workers idle connections per host instead of
// two, so that a burst's calls to one platform reuse connections (and
// their TLS sessions) instead of dialling for almost every call.
func platformTransport(workers int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(workers, t.MaxIdleConnsPerHost)
	t.MaxIdleConns = max(workers, t.MaxIdleConns)
	return t
}
