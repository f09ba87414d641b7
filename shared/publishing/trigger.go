package publishing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"oncepost/shared/post"
)

// MaxDelay is the longest delay a queued job can have (SQS's
// DelaySeconds stops at 900 s).
const MaxDelay = 900 * time.Second

// SlotLimit bounds how many targets one FireSlot enqueues; the rest stay
// scheduled and the sweeper triggers them MissedAfter past their slot.
const SlotLimit = 10000

// DelayUntil is the queue delay of a job for slot sent at now: the time
// left until slot rounded up to a whole second, so the job becomes
// visible at the slot or less than a second after it (never before),
// bounded to [0, MaxDelay]. A slot already past gives 0.
func DelayUntil(slot, now time.Time) time.Duration {
	d := slot.Sub(now) // saturates instead of overflowing
	if d <= 0 {
		return 0
	}
	if d >= MaxDelay {
		return MaxDelay
	}
	return (d + time.Second - 1) / time.Second * time.Second
}

// Trigger turns a due target into a queued job. It runs when a schedule
// fires (EventBridge Scheduler, or localcron) and when the sweeper finds a
// due target that was never triggered. Fire sends first, then marks the
// target triggered: a crash in between sends again, which the ledger absorbs;
// the other order could mark a target triggered that never reached the queue.
// A schedule may fire before the slot (EventBridge Scheduler fires a
// minute early, see ebschedule): the job is then delayed until the slot.
type Trigger struct {
	Posts Posts
	Queue Queue
	// Owner names this firing in slot claims (SlotFirings), e.g. the
	// function instance.
	Owner string
	// Continuer hands the rest of a slot that one invocation cannot fire
	// in its time to a new one; nil: the invocation fails and its retry
	// resumes.
	Continuer SlotContinuer
	// PageSize is how many targets FireSlot lists at a time; default
	// DefaultSlotPage.
	PageSize int
	// SendConcurrency is how many batch sends FireSlot has in flight;
	// default DefaultSendConcurrency.
	SendConcurrency int
	// Delay is the queue delay of a job for slot sent at now; nil means
	// DelayUntil (whole seconds, as SQS's DelaySeconds). A queue that
	// delays to the nanosecond (the embedded one) lets a job fired early
	// become visible at its slot, not up to a second after it.
	Delay func(slot, now time.Time) time.Duration
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

func (t *Trigger) now() time.Time { return nowFrom(t.Now) }

func (t *Trigger) delay(slot, now time.Time) time.Duration {
	if t.Delay != nil {
		return t.Delay(slot, now)
	}
	return DelayUntil(slot, now)
}

func (t *Trigger) log() *slog.Logger { return loggerOr(t.Logger) }

// Fire queues one target's job if the target is still scheduled for that
// slot, then marks it triggered. It reports whether it sent a job. A
// target that is already triggered, final, cancelled or rescheduled is
// left alone. The sweeper (a missed target) and the CLI (a slot too close
// to schedule) fire targets this way.
func (t *Trigger) Fire(ctx context.Context, ref TargetRef) (bool, error) {
	tg, sent, err := t.enqueue(ctx, ref)
	if err != nil || !sent {
		return sent, err
	}
	// Only a target still scheduled for this slot is marked: one held,
	// cancelled or moved to another time meanwhile is left alone (its new
	// schedule triggers it).
	_, err = t.Posts.UpdateTarget(ctx, ref.Post, tg.Account, post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled}, Slot: tg.Slot, At: t.now()})
	if err != nil && !errors.Is(err, post.ErrConflict) {
		// The job is queued; the publisher does not need the mark.
		return true, fmt.Errorf("trigger %s/%s: mark triggered: %w", ref.Post, ref.Account, err)
	}
	return true, nil
}

// Enqueue is Fire without the mark: a per-target schedule's firing on
// AWS, where the trigger function only reads posts (its IAM policy allows
// no write). As with FireSlot, the queued job is the record: a target
// whose job was lost stays scheduled and the sweeper triggers it, and a
// job sent twice is absorbed by the ledger.
func (t *Trigger) Enqueue(ctx context.Context, ref TargetRef) (bool, error) {
	_, sent, err := t.enqueue(ctx, ref)
	return sent, err
}

// enqueue sends the target's job if the target is still scheduled for
// ref's slot, and returns the target.
func (t *Trigger) enqueue(ctx context.Context, ref TargetRef) (post.Target, bool, error) {
	p, err := t.Posts.GetPost(ctx, ref.Post)
	if errors.Is(err, post.ErrNotFound) {
		t.log().WarnContext(ctx, "trigger for a post that does not exist", "post", ref.Post, "account", ref.Account)
		return post.Target{}, false, nil
	}
	if err != nil {
		return post.Target{}, false, fmt.Errorf("trigger %s/%s: %w", ref.Post, ref.Account, err)
	}
	tg, ok := p.Target(ref.Account)
	if !ok || tg.Status != post.Scheduled || !tg.Slot.Equal(ref.Slot) {
		return post.Target{}, false, nil
	}
	body, err := json.Marshal(Job{Post: p.ID, Account: tg.Account, Slot: tg.Slot})
	if err != nil {
		return post.Target{}, false, fmt.Errorf("trigger %s/%s: encode job: %w", ref.Post, ref.Account, err)
	}
	if _, err := t.Queue.Send(ctx, body, t.delay(tg.Slot, t.now())); err != nil {
		return post.Target{}, false, fmt.Errorf("trigger %s/%s: enqueue: %w", ref.Post, ref.Account, err)
	}
	t.log().InfoContext(ctx, "triggered", "post", p.ID, "account", tg.Account, "slot", tg.Slot.Format(time.RFC3339))
	return tg, true, nil
}

// FireDue triggers every target due at now, up to limit, and reports how
// many jobs it sent.
func (t *Trigger) FireDue(ctx context.Context, limit int) (int, error) {
	due, err := t.Posts.Due(ctx, t.now(), limit)
	if err != nil {
		return 0, fmt.Errorf("due targets: %w", err)
	}
	sent := 0
	var errs []error
	for _, ref := range due {
		ok, err := t.Fire(ctx, ref)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			sent++
		}
	}
	return sent, errors.Join(errs...)
}

// SlotReport says what one FireSlot call did.
type SlotReport struct {
	// Due counts the targets this call listed; Sent the jobs it sent.
	Due  int `json:"due"`
	Sent int `json:"sent"`
	// Already is "done" when an earlier firing of the slot sent every job
	// (a retried or repeated firing), "busy" when another firing holds the
	// slot now; "" otherwise.
	Already string `json:"already,omitempty"`
	// Continued: this call ran short of time and handed the rest of the
	// slot to a new invocation (SlotContinuer).
	Continued bool `json:"continued,omitempty"`
}

// Defaults of FireSlot's tuning fields.
const (
	// DefaultSlotPage is how many targets FireSlot lists at a time.
	DefaultSlotPage = 1000
	// DefaultSendConcurrency is how many batch sends (ten jobs each) are
	// in flight at once.
	DefaultSendConcurrency = 16
	// slotPageMargin is kept from the invocation's end after the last
	// page: the page's record, and the continuation's invoke.
	slotPageMargin = 3 * time.Second
)

// FireSlot enqueues the job of every target still scheduled at slot — a
// slot schedule's firing (ebschedule.PutSlot) — each delayed until the
// slot. Targets of earlier slots that are still scheduled are left alone:
// their own firing sent them (their jobs may be in the queue still) or, if
// it never came, the sweeper triggers them MissedAfter past their slot.
//
// With a SlotLister store it lists the slot a page at a time (PageSize)
// while the previous page's jobs are sent, ten per batch request (with a
// BatchSender queue) and SendConcurrency batches at once: the top of the
// hour's 10,000 targets go out in seconds, not one request after another.
// With a SlotFirings store it first claims the slot (two firings never
// send it at once) and records after each page how far it got, so a
// retried or repeated firing sends only the jobs no firing sent yet, and
// one that finds the slot done sends nothing; a slot that fits one page
// is claimed and recorded done in one write, before its jobs go. Before each page it checks
// that what is left of the invocation covers the page (twice the slowest
// page so far, at least slotPageMargin): if not, it records where it
// stopped and hands the rest to a new invocation (Continuer), or, without
// one, returns an error so that the invocation is retried and resumes.
//
// Unlike Fire it does not mark the targets triggered: the queued job is
// the record, and marking would cost a write (and two index writes) per
// post on the publish path. A target whose job was lost stays scheduled,
// and the sweeper triggers it; a job that is sent twice (a firing that
// died between its send and its record) is absorbed by the ledger. The
// listing checks the targets against the store, so a target cancelled or
// moved before the firing is not sent; one cancelled after it (or just
// before, within what an eventually consistent check may miss) is stopped
// by the publisher's consistent re-read.
func (t *Trigger) FireSlot(ctx context.Context, slot time.Time) (SlotReport, error) {
	slot = slot.UTC()
	name := slot.Format(time.RFC3339Nano)
	lister, paged := t.Posts.(SlotLister)
	if !paged {
		return t.fireSlotOnce(ctx, slot)
	}
	var rep SlotReport
	first, err := lister.DueAt(ctx, slot, "", orDefault(t.PageSize, DefaultSlotPage))
	if err != nil {
		return rep, fmt.Errorf("trigger slot %s: due targets: %w", name, err)
	}
	if len(first.Targets) == 0 && first.Next == "" {
		// Nothing is scheduled at the slot (every post cancelled or moved):
		// nothing to send, nothing to record.
		t.log().InfoContext(ctx, "slot triggered", "slot", name, "due", 0, "sent", 0)
		return rep, nil
	}
	firings, recorded := t.Posts.(SlotFirings)
	var f SlotFiring
	planned := false
	if recorded {
		// A slot that fits one page is recorded done with its claim, before
		// its jobs go: one write a slot. (A firing that then dies leaves its
		// jobs to the sweeper, MissedAfter past the slot; one that fails
		// takes the record back.) A larger slot is claimed, then recorded
		// page by page.
		var plan SlotFiring
		if first.Next == "" {
			plan = SlotFiring{Sent: len(first.Targets), Done: true}
		}
		f, planned, err = firings.ClaimSlot(ctx, slot, t.Owner, t.now(), t.claimUntil(ctx), plan)
		switch {
		case errors.Is(err, ErrSlotBusy):
			rep.Already = "busy"
			t.log().InfoContext(ctx, "slot firing skipped: another firing holds it", "slot", name, "err", err)
			return rep, nil
		case err != nil:
			return rep, fmt.Errorf("trigger slot %s: %w", name, err)
		case f.Done:
			rep.Already = "done"
			t.log().InfoContext(ctx, "slot already fired", "slot", name, "sent", f.Sent)
			return rep, nil
		}
	}
	if planned {
		sent, err := t.sendSlotPage(ctx, slot, first.Targets)
		rep.Due, rep.Sent = len(first.Targets), sent
		if err != nil {
			// Take the record back: the retry sends the slot again (the
			// ledger absorbs the jobs that did go).
			t.release(ctx, firings, recorded, slot, SlotFiring{Sent: sent})
			return rep, fmt.Errorf("trigger slot %s: %w", name, err)
		}
		t.log().InfoContext(ctx, "slot triggered", "slot", name, "due", rep.Due, "sent", rep.Sent)
		return rep, nil
	}
	if f.After != "" {
		// An earlier firing got this far: the first page read is behind it.
		first = SlotPage{Next: f.After}
	}
	pages, stop := t.readPages(ctx, lister, slot, first)
	defer stop()
	var slowest time.Duration
	for pg := range pages {
		if pg.err != nil {
			t.release(ctx, firings, recorded, slot, f)
			return rep, fmt.Errorf("trigger slot %s: due targets: %w", name, pg.err)
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < max(2*slowest, slotPageMargin)+slotPageMargin {
			return rep, t.handOver(ctx, firings, recorded, slot, f, &rep)
		}
		started := time.Now()
		sent, err := t.sendSlotPage(ctx, slot, pg.page.Targets)
		rep.Due += len(pg.page.Targets)
		rep.Sent += sent
		f.Sent += sent
		if err != nil {
			// The page is not recorded: a retry sends it again (the
			// ledger absorbs the jobs that did go).
			t.release(ctx, firings, recorded, slot, f)
			return rep, fmt.Errorf("trigger slot %s: %w", name, err)
		}
		slowest = max(slowest, time.Since(started))
		f.After, f.Done = pg.page.Next, pg.page.Next == ""
		if recorded {
			if err := firings.RecordSlot(ctx, slot, t.Owner, f, false); err != nil {
				return rep, fmt.Errorf("trigger slot %s: %w", name, err)
			}
		}
	}
	t.log().InfoContext(ctx, "slot triggered", "slot", name, "due", rep.Due, "sent", rep.Sent)
	return rep, nil
}

// claimUntil is how long a firing claims its slot: to the invocation's
// end, or two minutes without a deadline.
func (t *Trigger) claimUntil(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return t.now().Add(time.Until(d))
	}
	return t.now().Add(2 * time.Minute)
}

// release frees the slot's claim after a failure, keeping what was
// recorded, so that a retry resumes at once.
func (t *Trigger) release(ctx context.Context, firings SlotFirings, recorded bool, slot time.Time, f SlotFiring) {
	if !recorded {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := firings.RecordSlot(rctx, slot, t.Owner, f, true); err != nil {
		t.log().WarnContext(ctx, "could not release the slot's claim; it lapses at the invocation's end", "slot", slot.Format(time.RFC3339Nano), "err", err)
	}
}

// handOver records where the firing stopped and hands the rest of the
// slot to a new invocation; without a Continuer, or when this invocation
// sent nothing (not even one page fits its time), it returns an error, so
// that the invocation is retried (a bounded number of times) and resumes
// there.
func (t *Trigger) handOver(ctx context.Context, firings SlotFirings, recorded bool, slot time.Time, f SlotFiring, rep *SlotReport) error {
	name := slot.Format(time.RFC3339Nano)
	t.release(ctx, firings, recorded, slot, f)
	if t.Continuer == nil || !recorded || rep.Sent == 0 {
		// Without progress a continuation would hand over again, and
		// again: the invocation fails instead, and its retries are bounded.
		return fmt.Errorf("trigger slot %s: out of time after %d jobs; the retried firing resumes", name, rep.Sent)
	}
	if err := t.Continuer.ContinueSlot(ctx, slot); err != nil {
		return fmt.Errorf("trigger slot %s: out of time after %d jobs, and the continuation failed (the retried firing resumes): %w", name, rep.Sent, err)
	}
	rep.Continued = true
	t.log().InfoContext(ctx, "slot firing continued in a new invocation", "slot", name, "sent", rep.Sent, "after", f.After)
	return nil
}

// slotPage is one page read for FireSlot, or the error that ended the
// reading.
type slotPage struct {
	page SlotPage
	err  error
}

// readPages yields first (unless it lists nothing and more follows),
// then lists the slot's next pages from first.Next, one page ahead of the
// sender. stop ends the reading.
func (t *Trigger) readPages(ctx context.Context, l SlotLister, slot time.Time, first SlotPage) (<-chan slotPage, func()) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan slotPage, 1)
	go func() {
		defer close(out)
		pg, err := first, error(nil)
		for {
			if err != nil || len(pg.Targets) > 0 || pg.Next == "" {
				select {
				case out <- slotPage{page: pg, err: err}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil || pg.Next == "" {
				return
			}
			pg, err = l.DueAt(ctx, slot, pg.Next, orDefault(t.PageSize, DefaultSlotPage))
		}
	}()
	return out, cancel
}

// sendSlotPage sends the jobs of a page of slot's targets, each delayed
// until the slot: ten per request with a BatchSender queue,
// SendConcurrency requests at once. It counts what was sent.
func (t *Trigger) sendSlotPage(ctx context.Context, slot time.Time, refs []TargetRef) (int, error) {
	now := t.now()
	msgs := make([]Outgoing, 0, len(refs))
	for _, ref := range refs {
		if !ref.Slot.Equal(slot) {
			continue
		}
		body, err := json.Marshal(Job{Post: ref.Post, Account: ref.Account, Slot: ref.Slot.UTC()})
		if err != nil {
			return 0, fmt.Errorf("encode job %s/%s: %w", ref.Post, ref.Account, err)
		}
		msgs = append(msgs, Outgoing{Body: body, Delay: t.delay(ref.Slot, now)})
	}
	const batch = 10
	var (
		mu   sync.Mutex
		sent int
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, orDefault(t.SendConcurrency, DefaultSendConcurrency))
	for i := 0; i < len(msgs); i += batch {
		chunk := msgs[i:min(i+batch, len(msgs))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			n, err := t.send(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			sent += n
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return sent, errors.Join(errs...)
}

// fireSlotOnce is FireSlot for a store that cannot list one slot: Due up
// to SlotLimit targets, every job sent, nothing recorded.
func (t *Trigger) fireSlotOnce(ctx context.Context, slot time.Time) (SlotReport, error) {
	name := slot.Format(time.RFC3339Nano)
	due, err := t.Posts.Due(ctx, slot, SlotLimit)
	if err != nil {
		return SlotReport{}, fmt.Errorf("trigger slot %s: due targets: %w", name, err)
	}
	if len(due) == SlotLimit {
		t.log().WarnContext(ctx, "slot has more due targets than one firing sends; the sweeper triggers the rest", "slot", name, "limit", SlotLimit)
	}
	var exact []TargetRef
	for _, ref := range due {
		if ref.Slot.Equal(slot) {
			exact = append(exact, ref)
		}
	}
	sent, err := t.sendSlotPage(ctx, slot, exact)
	rep := SlotReport{Due: len(exact), Sent: sent}
	t.log().InfoContext(ctx, "slot triggered", "slot", name, "due", rep.Due, "sent", sent)
	if err != nil {
		return rep, fmt.Errorf("trigger slot %s: %w", name, err)
	}
	return rep, nil
}

// send sends msgs in batches when the queue can, one by one otherwise,
// and counts what was sent.
func (t *Trigger) send(ctx context.Context, msgs []Outgoing) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	if b, ok := t.Queue.(BatchSender); ok {
		ids, err := b.SendBatch(ctx, msgs)
		sent := 0
		for _, id := range ids {
			if id != "" {
				sent++
			}
		}
		return sent, err
	}
	sent := 0
	var errs []error
	for _, m := range msgs {
		if _, err := t.Queue.Send(ctx, m.Body, m.Delay); err != nil {
			errs = append(errs, err)
			continue
		}
		sent++
	}
	return sent, errors.Join(errs...)
}
