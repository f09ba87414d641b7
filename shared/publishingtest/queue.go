package publishingtest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"oncepost/shared/publishing"
)

// QueueOptions tunes TestQueue to an adapter.
type QueueOptions struct {
	// Unit is the time granularity the adapter honours for delays and visibility
	// timeouts (e.g. 20ms for sqlitestore, 1s for SQS emulators). Tests wait a few Units.
	// Zero means one second.
	Unit time.Duration
	// Sibling returns another queue (another name) of the same backend as
	// q: the same store, the same SQS account. The dead-letter admin
	// checks use it to show that a queue's Redrive and Drop never act on
	// another queue's dead letters. Nil: they use a second queue from
	// newQueue, which proves less for a backend that holds many queues.
	Sibling func(q publishing.Queue) publishing.Queue
}

// TestQueue checks that a queue adapter has the SQS semantics the
// publisher relies on (DESIGN §2, §6): a received message stays hidden for
// its visibility timeout and is then delivered again with a new receipt and
// a higher receive count; delays and retries hold a message back; a message
// delivered maxReceives times is dead-lettered instead of delivered again;
// two receivers never get the same message within its visibility timeout;
// bodies are bytes, not text. newQueue must return an empty queue whose
// messages go to the dead-letter queue after maxReceives deliveries.
//
// The suite runs in real time: a correct adapter passes each check in
// about a dozen Units or less. Visibility timeouts and delays are whole
// Units (at most 5 of them are waited out); a message may become visible
// up to one Unit early and several Units late.
// Receive batches are at most 10 messages (the SQS limit), and a Receive
// may return fewer messages than are visible (SQS short polling): the
// suite polls every quarter Unit.
//
// Ack with a receipt from an earlier delivery must fail and must not
// delete the message: the stale owner's work is no longer the one in
// flight.
//
// Sizes: a body of publishing.MaxMessageBytes is sent, a larger one is
// refused; a dead-letter reason longer than publishing.MaxReasonBytes is
// cut to at most that many bytes, keeping its start and valid UTF-8 (how
// the cut is marked is the adapter's choice).
//
// Every queue must also implement publishing.DeadLetterAdmin: Redrive
// puts a dead letter back, visible at once, with the same id and body,
// whose next delivery counts as its first, and it is no longer listed
// (a second Redrive finds nothing); Drop deletes it for good; both give
// publishing.ErrMessageNotFound for an id that is not among this queue's
// dead letters (unknown, still queued, already redriven or dropped, or
// another queue's: see QueueOptions.Sibling).
func TestQueue(t *testing.T, newQueue func(t *testing.T, maxReceives int) publishing.Queue, opts QueueOptions) {
	t.Helper()
	runChecks(t, queueChecks(opts), func(t *testing.T) queueFactory {
		return func(maxReceives int) publishing.Queue { return newQueue(t, maxReceives) }
	})
}

// queueFactory returns the check's queue; each check calls it once, with
// the maximum number of deliveries it needs (the dead-letter admin check of
// another queue calls it twice when QueueOptions.Sibling is nil).
type queueFactory func(maxReceives int) publishing.Queue

// defaultMaxReceives is more deliveries than any check makes of one
// message, except the one that checks dead-lettering.
const defaultMaxReceives = 5

func queueChecks(opts QueueOptions) []check[queueFactory] {
	u := opts.Unit
	if u <= 0 {
		u = time.Second
	}
	with := func(f func(x *qt)) func(t testing.TB, newQ queueFactory) {
		return func(t testing.TB, newQ queueFactory) { f(&qt{t: t, u: u, newQ: newQ, sibling: opts.Sibling}) }
	}
	return []check[queueFactory]{
		{"Receive/empty_queue", with(queueEmpty)},
		{"Receive/send_receive_ack", with(queueSendReceiveAck)},
		{"Receive/hidden_then_redelivered", with(queueVisibility)},
		{"Receive/concurrent_receivers_disjoint", with(queueConcurrent)},
		{"Ack/stale_receipt_refused", with(queueStaleAck)},
		{"Send/delay", with(queueDelay)},
		{"Send/arbitrary_bytes", with(queueBodies)},
		{"Send/oversized_refused", with(queueOversized)},
		{"Retry/delay", with(queueRetry)},
		{"DeadLetter/after_max_receives", with(queueMaxReceives)},
		{"DeadLetter/explicit_reason", with(queueDeadLetter)},
		{"DeadLetter/long_reason_cut", with(queueLongReason)},
		{"DeadLetterAdmin/redrive", with(queueRedrive)},
		{"DeadLetterAdmin/drop", with(queueDrop)},
		{"DeadLetterAdmin/not_found", with(queueAdminNotFound)},
		{"Depth/visible_delayed_in_flight", with(queueDepth)},
	}
}

// queueDepth: Depth counts messages by where they stand, and only the
// queue's own: visible, delayed (never received), in flight (received,
// hidden). SQS's counts are approximate and may lag, so each expected
// count is awaited for a few units.
func queueDepth(x *qt) {
	x.queue(defaultMaxReceives)
	want := func(d publishing.QueueDepth, what string) {
		x.t.Helper()
		end := time.Now().Add(6 * x.u)
		for {
			got, err := x.q.Depth(x.t.Context())
			if err != nil {
				x.t.Fatalf("%s: Depth = %v", what, err)
			}
			// The queue's own messages; dead letters are the dead-letter
			// checks' (a dead-letter queue may be shared).
			got.DeadLetters, got.Undecodable = 0, 0
			if got == d {
				return
			}
			if time.Now().After(end) {
				x.t.Fatalf("%s: Depth = %+v, want %+v", what, got, d)
			}
			time.Sleep(x.poll())
		}
	}
	want(publishing.QueueDepth{}, "empty queue")
	x.send([]byte("first"), 0)
	x.send([]byte("second"), 0)
	x.send([]byte("later"), 60*x.u)
	want(publishing.QueueDepth{Visible: 2, Delayed: 1}, "two sent, one delayed")
	m := x.await(1, 1, 30*x.u, 5*x.u, "one of the two").msgs[0]
	want(publishing.QueueDepth{Visible: 1, Delayed: 1, InFlight: 1}, "one received")
	if err := x.q.DeadLetter(x.t.Context(), m.Receipt, "bad"); err != nil {
		x.t.Fatal(err)
	}
	want(publishing.QueueDepth{Visible: 1, Delayed: 1}, "the received one dead-lettered")
}

// qt is one queue check: the queue and the time unit.
type qt struct {
	t       testing.TB
	u       time.Duration
	newQ    queueFactory
	sibling func(publishing.Queue) publishing.Queue
	q       publishing.Queue
}

func (x *qt) queue(maxReceives int) publishing.Queue {
	x.q = x.newQ(maxReceives)
	return x.q
}

func (x *qt) send(body []byte, delay time.Duration) string {
	x.t.Helper()
	id, err := x.q.Send(x.t.Context(), body, delay)
	if err != nil {
		x.t.Fatalf("Send(%d bytes, delay %s) = %v, want nil", len(body), delay, err)
	}
	if id == "" {
		x.t.Fatalf("Send returned an empty id")
	}
	return id
}

func (x *qt) poll() time.Duration { return max(x.u/4, time.Millisecond) }

// none checks that one Receive returns no message.
func (x *qt) none(vis time.Duration, what string) {
	x.t.Helper()
	ms, err := x.q.Receive(x.t.Context(), 10, vis)
	if err != nil {
		x.t.Errorf("%s: Receive = %v, want nil", what, err)
	}
	for _, m := range ms {
		x.t.Errorf("%s: Receive delivered %s (body %q, receive count %d), want nothing", what, m.ID, m.Body, m.ReceiveCount)
	}
}

// quiet polls for d and checks that nothing is delivered.
func (x *qt) quiet(vis, d time.Duration, what string) {
	x.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) && !x.t.Failed() {
		x.none(vis, what)
		time.Sleep(x.poll())
	}
}

// delivery is what await collected.
type delivery struct {
	msgs []publishing.Message
	// asked is when the Receive that returned the first message was
	// called; got is when it returned.
	asked, got time.Time
}

// await polls Receive(max, vis) until n messages have arrived or within
// passes, and fails the check if fewer arrived.
func (x *qt) await(n, max int, vis, within time.Duration, what string) delivery {
	x.t.Helper()
	var d delivery
	end := time.Now().Add(within)
	for {
		asked := time.Now()
		ms, err := x.q.Receive(x.t.Context(), max, vis)
		got := time.Now()
		if err != nil {
			x.t.Fatalf("%s: Receive = %v, want nil", what, err)
		}
		if len(ms) > max {
			x.t.Errorf("%s: Receive(max %d) returned %d messages", what, max, len(ms))
		}
		if len(ms) > 0 && d.msgs == nil {
			d.asked, d.got = asked, got
		}
		d.msgs = append(d.msgs, ms...)
		if len(d.msgs) >= n {
			if len(d.msgs) > n {
				x.t.Errorf("%s: %d messages delivered, want %d", what, len(d.msgs), n)
			}
			return d
		}
		if got.After(end) {
			x.t.Fatalf("%s: %d of %d messages delivered within %s", what, len(d.msgs), n, within)
		}
		time.Sleep(x.poll())
	}
}

func (x *qt) one(vis, within time.Duration, what string) (publishing.Message, delivery) {
	x.t.Helper()
	d := x.await(1, 10, vis, within, what)
	return d.msgs[0], d
}

func (x *qt) ack(receipt, what string) {
	x.t.Helper()
	if err := x.q.Ack(x.t.Context(), receipt); err != nil {
		x.t.Errorf("%s: Ack = %v, want nil", what, err)
	}
}

func wantDelivery(t testing.TB, m publishing.Message, id string, body []byte, count int, what string) {
	t.Helper()
	if m.ID != id || !bytes.Equal(m.Body, body) || m.ReceiveCount != count || m.Receipt == "" {
		t.Errorf("%s: got id %s, body %q, receive count %d, receipt %q; want id %s, body %q, receive count %d, a receipt",
			what, m.ID, m.Body, m.ReceiveCount, m.Receipt, id, body, count)
	}
}

// near reports whether tm is within a minute of now: adapter clocks
// (emulators) may differ from ours a little, but not by more.
func near(tm time.Time) bool {
	d := time.Since(tm)
	return d > -time.Minute && d < time.Minute
}

func queueEmpty(x *qt) {
	x.queue(defaultMaxReceives)
	x.none(x.u, "empty queue")
	dl, err := x.q.DeadLetters(x.t.Context(), 10)
	if err != nil || len(dl) != 0 {
		x.t.Errorf("DeadLetters(empty queue) = %d messages, %v; want none, nil", len(dl), err)
	}
}

func queueSendReceiveAck(x *qt) {
	x.queue(defaultMaxReceives)
	bodies := map[string][]byte{}
	for i := range 3 {
		b := fmt.Appendf(nil, `{"job":%d}`, i)
		bodies[x.send(b, 0)] = b
	}
	vis := 3 * x.u
	d := x.await(3, 1, vis, 5*x.u, "three sent messages")
	receipts := map[string]bool{}
	seen := map[string]bool{}
	for _, m := range d.msgs {
		body, ok := bodies[m.ID]
		switch {
		case !ok:
			x.t.Errorf("delivered id %s was not returned by Send", m.ID)
			continue
		case seen[m.ID]:
			x.t.Errorf("message %s delivered twice within its visibility timeout", m.ID)
		}
		seen[m.ID] = true
		wantDelivery(x.t, m, m.ID, body, 1, "first delivery")
		if receipts[m.Receipt] {
			x.t.Errorf("receipt %q delivered twice", m.Receipt)
		}
		receipts[m.Receipt] = true
		if !near(m.SentAt) {
			x.t.Errorf("message %s SentAt = %s, want about now", m.ID, m.SentAt.Format(time.RFC3339Nano))
		}
	}
	x.none(vis, "all three received")
	for _, m := range d.msgs {
		x.ack(m.Receipt, "first delivery")
	}
	x.quiet(vis, vis+3*x.u, "after Ack, past the visibility timeout")
}

func queueVisibility(x *qt) {
	x.queue(defaultMaxReceives)
	body := []byte("hide me")
	id := x.send(body, 0)
	vis := 4 * x.u
	m1, d1 := x.one(vis, 5*x.u, "first delivery")
	wantDelivery(x.t, m1, id, body, 1, "first delivery")
	x.none(vis, "right after the first delivery")
	time.Sleep(x.u)
	x.none(vis, "one unit into the visibility timeout")
	m2, d2 := x.one(vis, vis+6*x.u, "after the visibility timeout")
	wantDelivery(x.t, m2, id, body, 2, "second delivery")
	if m2.Receipt == m1.Receipt {
		x.t.Errorf("second delivery reused the first receipt %q", m1.Receipt)
	}
	if hidden := d2.got.Sub(d1.asked); hidden < vis-x.u {
		x.t.Errorf("message hidden for %s, want its visibility timeout %s", hidden, vis)
	}
	x.ack(m2.Receipt, "second delivery")
}

func queueConcurrent(x *qt) {
	const n, receivers = 50, 4
	x.queue(defaultMaxReceives)
	sent := map[string]bool{}
	for i := range n {
		sent[x.send(fmt.Appendf(nil, "msg-%02d", i), 0)] = true
	}
	vis := 60 * x.u
	end := time.Now().Add(20 * x.u)
	var (
		mu   sync.Mutex
		seen = map[string][]int{}
		wg   sync.WaitGroup
	)
	for r := range receivers {
		wg.Go(func() {
			for time.Now().Before(end) {
				mu.Lock()
				done := len(seen) >= n
				mu.Unlock()
				if done {
					return
				}
				ms, err := x.q.Receive(x.t.Context(), 10, vis)
				if err != nil {
					x.t.Errorf("receiver %d: Receive = %v", r, err)
					return
				}
				mu.Lock()
				for _, m := range ms {
					seen[m.ID] = append(seen[m.ID], r)
				}
				mu.Unlock()
				if len(ms) == 0 {
					time.Sleep(x.poll())
				}
			}
		})
	}
	wg.Wait()
	for id, rs := range seen {
		if !sent[id] {
			x.t.Errorf("delivered id %s was not returned by Send", id)
		}
		if len(rs) > 1 {
			x.t.Errorf("message %s delivered %d times within its visibility timeout (to receivers %v)", id, len(rs), rs)
		}
	}
	for id := range sent {
		if _, ok := seen[id]; !ok {
			x.t.Errorf("message %s never delivered", id)
		}
	}
}

func queueStaleAck(x *qt) {
	x.queue(defaultMaxReceives)
	body := []byte("slow worker")
	id := x.send(body, 0)
	m1, _ := x.one(2*x.u, 5*x.u, "first delivery")
	m2, _ := x.one(3*x.u, 2*x.u+6*x.u, "redelivery")
	wantDelivery(x.t, m2, id, body, 2, "redelivery")
	if err := x.q.Ack(x.t.Context(), m1.Receipt); err == nil {
		x.t.Errorf("Ack(first receipt) after redelivery = nil, want an error")
	}
	if err := x.q.Ack(x.t.Context(), "not-a-receipt"); err == nil {
		x.t.Errorf("Ack(unknown receipt) = nil, want an error")
	}
	m3, _ := x.one(2*x.u, 3*x.u+6*x.u, "third delivery, after the stale Ack")
	wantDelivery(x.t, m3, id, body, 3, "third delivery")
	x.ack(m3.Receipt, "third delivery")
}

func queueDelay(x *qt) {
	x.queue(defaultMaxReceives)
	delay := 4 * x.u
	sent := time.Now()
	body := []byte("later")
	id := x.send(body, delay)
	x.none(x.u, "right after a delayed Send")
	time.Sleep(x.u)
	x.none(x.u, "one unit into the delay")
	m, d := x.one(10*x.u, delay+6*x.u, "after the delay")
	wantDelivery(x.t, m, id, body, 1, "delayed delivery")
	if waited := d.got.Sub(sent); waited < delay-x.u {
		x.t.Errorf("delayed message delivered after %s, want its delay %s", waited, delay)
	}
}

func queueBodies(x *qt) {
	x.queue(defaultMaxReceives)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	random := make([]byte, 32<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	bodies := map[string][]byte{
		"invalid UTF-8":    {0xff, 0xfe, 0xfd, 'a', 0xc3, 0x28, 0x80},
		"NUL bytes":        []byte("a\x00b\x00"),
		"every byte":       all,
		"JSON":             []byte(`{"post_id":"p-1","account_id":"acct-a","slot":"2026-03-14T09:26:53.589793238Z"}`),
		"unicode":          []byte("Grüße 🎉 \u2028 \r\n\t"),
		"32 KiB random":    random,
		"base64 lookalike": []byte("aGVsbG8="),
	}
	names := map[string]string{}
	for name, b := range bodies {
		sent := bytes.Clone(b)
		names[x.send(sent, 0)] = name
		for i := range sent {
			sent[i] = 'X' // the queue must have copied the body
		}
	}
	d := x.await(len(bodies), 10, 10*x.u, 5*x.u, "bodies")
	for _, m := range d.msgs {
		name, ok := names[m.ID]
		if !ok {
			x.t.Errorf("delivered id %s was not returned by Send", m.ID)
			continue
		}
		if !bytes.Equal(m.Body, bodies[name]) {
			x.t.Errorf("body %s: got %d bytes %q, want %d bytes %q", name, len(m.Body), trim(m.Body), len(bodies[name]), trim(bodies[name]))
		}
	}

	// An empty body either round-trips or is refused by Send; it is never
	// turned into something else.
	id, err := x.q.Send(x.t.Context(), []byte{}, 0)
	if err != nil {
		x.t.Logf("Send(empty body) = %v; refusing it is allowed", err)
		return
	}
	m, _ := x.one(10*x.u, 5*x.u, "empty body")
	if m.ID != id || len(m.Body) != 0 {
		x.t.Errorf("empty body: got id %s body %q, want id %s and no bytes", m.ID, trim(m.Body), id)
	}
}

func trim(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

func queueRetry(x *qt) {
	x.queue(defaultMaxReceives)
	body := []byte("try again")
	id := x.send(body, 0)
	vis := 30 * x.u // far longer than the check: only Retry makes it visible
	m1, _ := x.one(vis, 5*x.u, "first delivery")
	delay := 3 * x.u
	retried := time.Now()
	if err := x.q.Retry(x.t.Context(), m1.Receipt, delay); err != nil {
		x.t.Fatalf("Retry(delay %s) = %v, want nil", delay, err)
	}
	x.none(vis, "right after Retry")
	m2, d2 := x.one(vis, delay+6*x.u, "after the Retry delay")
	wantDelivery(x.t, m2, id, body, 2, "delivery after Retry")
	if waited := d2.got.Sub(retried); waited < delay-x.u {
		x.t.Errorf("retried message delivered after %s, want its delay %s", waited, delay)
	}
	if m2.Receipt == m1.Receipt {
		x.t.Errorf("delivery after Retry reused the first receipt %q", m1.Receipt)
	}
	if err := x.q.Retry(x.t.Context(), m2.Receipt, 0); err != nil {
		x.t.Fatalf("Retry(no delay) = %v, want nil", err)
	}
	m3, _ := x.one(vis, 4*x.u, "after Retry without delay")
	wantDelivery(x.t, m3, id, body, 3, "delivery after Retry without delay")
	x.ack(m3.Receipt, "delivery after Retry without delay")
}

func queueMaxReceives(x *qt) {
	const maxReceives = 3
	x.queue(maxReceives)
	body := []byte("poison")
	id := x.send(body, 0)
	vis := 30 * x.u
	for i := 1; i <= maxReceives; i++ {
		m, _ := x.one(vis, 5*x.u, fmt.Sprintf("delivery %d", i))
		wantDelivery(x.t, m, id, body, i, fmt.Sprintf("delivery %d", i))
		if err := x.q.Retry(x.t.Context(), m.Receipt, 0); err != nil {
			x.t.Fatalf("Retry after delivery %d = %v", i, err)
		}
	}
	x.quiet(vis, 4*x.u, fmt.Sprintf("after %d deliveries", maxReceives))
	dl, err := x.q.DeadLetters(x.t.Context(), 10)
	if err != nil {
		x.t.Fatalf("DeadLetters = %v", err)
	}
	if len(dl) != 1 {
		x.t.Fatalf("DeadLetters = %d messages, want 1", len(dl))
	}
	m := dl[0]
	if m.ID != id || !bytes.Equal(m.Body, body) || m.ReceiveCount < maxReceives {
		x.t.Errorf("dead letter: id %s body %q receive count %d, want id %s body %q receive count at least %d",
			m.ID, m.Body, m.ReceiveCount, id, body, maxReceives)
	}
	if !strings.Contains(m.Reason, strconv.Itoa(maxReceives)) {
		x.t.Errorf("dead letter reason %q does not mention the receive count %d", m.Reason, maxReceives)
	}
	if !near(m.At) {
		x.t.Errorf("dead letter At = %s, want about now", m.At.Format(time.RFC3339Nano))
	}
}

func queueDeadLetter(x *qt) {
	x.queue(defaultMaxReceives)
	names := []string{"A", "B", "C"}
	ids := map[string]string{}
	for _, n := range names {
		ids[x.send([]byte("body "+n), 0)] = n
	}
	vis := 5 * x.u
	d := x.await(len(names), 10, vis, 5*x.u, "three messages")
	receipt := map[string]string{}
	byName := map[string]string{}
	for _, m := range d.msgs {
		receipt[ids[m.ID]] = m.Receipt
		byName[ids[m.ID]] = m.ID
	}
	for i, n := range names {
		if i > 0 {
			time.Sleep(x.u) // dead-letter times a unit apart, so "oldest first" is defined
		}
		if err := x.q.DeadLetter(x.t.Context(), receipt[n], "reason "+n+": invalid payload"); err != nil {
			x.t.Fatalf("DeadLetter(%s) = %v, want nil", n, err)
		}
	}
	movedAt := time.Now()
	if err := x.q.DeadLetter(x.t.Context(), "not-a-receipt", "bogus"); err == nil {
		x.t.Errorf("DeadLetter(unknown receipt) = nil, want an error")
	}
	for _, limit := range []int{10, 2} {
		dl, err := x.q.DeadLetters(x.t.Context(), limit)
		if err != nil {
			x.t.Fatalf("DeadLetters(%d) = %v", limit, err)
		}
		want := names[:min(limit, len(names))]
		if len(dl) != len(want) {
			x.t.Errorf("DeadLetters(%d) = %d messages, want %d", limit, len(dl), len(want))
			continue
		}
		for i, n := range want {
			m := dl[i]
			if m.ID != byName[n] || string(m.Body) != "body "+n || m.ReceiveCount != 1 || m.Reason != "reason "+n+": invalid payload" || !near(m.At) {
				x.t.Errorf("DeadLetters(%d)[%d] = id %s body %q receive count %d reason %q at %s; want id %s body %q receive count 1 reason %q at about now",
					limit, i, m.ID, m.Body, m.ReceiveCount, m.Reason, m.At.Format(time.RFC3339Nano), byName[n], "body "+n, "reason "+n+": invalid payload")
			}
		}
	}
	// Past the receipts' visibility timeout, nothing comes back.
	x.quiet(vis, time.Until(movedAt.Add(vis+2*x.u)), "after DeadLetter, past the visibility timeout")
}

// A body of MaxMessageBytes is delivered whole; one byte more is refused
// and never delivered.
func queueOversized(x *qt) {
	x.queue(defaultMaxReceives)
	rng := rand.New(rand.NewPCG(3, 4))
	largest := make([]byte, publishing.MaxMessageBytes)
	for i := range largest {
		largest[i] = byte(rng.UintN(256))
	}
	if id, err := x.q.Send(x.t.Context(), append(bytes.Clone(largest), 'x'), 0); err == nil {
		x.t.Errorf("Send(%d bytes) = id %s, nil; want an error (the limit is %d bytes)", publishing.MaxMessageBytes+1, id, publishing.MaxMessageBytes)
	}
	id := x.send(largest, 0)
	m, _ := x.one(10*x.u, 5*x.u, "the largest body")
	if m.ID != id || !bytes.Equal(m.Body, largest) {
		x.t.Errorf("largest body: got id %s, %d bytes; want id %s, the %d bytes sent", m.ID, len(m.Body), id, len(largest))
	}
	x.ack(m.Receipt, "the largest body")
	x.quiet(x.u, 2*x.u, "after the refused Send")
}

// Reasons up to MaxReasonBytes are kept whole; longer ones are cut to at
// most MaxReasonBytes bytes of valid UTF-8 that start like the reason.
// Three long reasons put 3-byte runes at every offset, so a cut that
// ignores rune boundaries splits a rune in at least two of them.
func queueLongReason(x *qt) {
	x.queue(defaultMaxReceives)
	long := strings.Repeat("Zeichen € ", publishing.MaxReasonBytes/4)
	reasons := []string{
		strings.Repeat("r", publishing.MaxReasonBytes),
		"€" + strings.Repeat("€", publishing.MaxReasonBytes),
		"x" + strings.Repeat("€", publishing.MaxReasonBytes),
		"xy" + strings.Repeat("€", publishing.MaxReasonBytes),
		long,
	}
	byID := map[string]int{}
	for i := range reasons {
		byID[x.send(fmt.Appendf(nil, "reason %d", i), 0)] = i
	}
	d := x.await(len(reasons), 10, 10*x.u, 5*x.u, "messages to dead-letter")
	receipts := make([]string, len(reasons))
	for _, m := range d.msgs {
		receipts[byID[m.ID]] = m.Receipt
	}
	for i, r := range reasons {
		if i > 0 {
			time.Sleep(x.u) // dead-letter times a unit apart, so "oldest first" is defined
		}
		if err := x.q.DeadLetter(x.t.Context(), receipts[i], r); err != nil {
			x.t.Fatalf("DeadLetter(reason %d of %d bytes) = %v, want nil", i, len(r), err)
		}
	}
	dl, err := x.q.DeadLetters(x.t.Context(), 10)
	if err != nil {
		x.t.Fatalf("DeadLetters = %v", err)
	}
	if len(dl) != len(reasons) {
		x.t.Fatalf("DeadLetters = %d messages, want %d", len(dl), len(reasons))
	}
	for i, r := range reasons {
		got := dl[i].Reason
		if len(r) <= publishing.MaxReasonBytes {
			if got != r {
				x.t.Errorf("reason %d of %d bytes (the limit) stored as %d bytes %q…, want it whole", i, len(r), len(got), trim([]byte(got)))
			}
			continue
		}
		keep := publishing.MaxReasonBytes / 2
		switch {
		case len(got) > publishing.MaxReasonBytes:
			x.t.Errorf("reason %d of %d bytes stored as %d bytes, want at most %d", i, len(r), len(got), publishing.MaxReasonBytes)
		case !utf8.ValidString(got):
			x.t.Errorf("reason %d cut inside a rune: stored %d bytes ending %q", i, len(got), got[max(len(got)-12, 0):])
		case len(got) < keep || got[:keep] != r[:keep]:
			x.t.Errorf("reason %d stored as %d bytes %q…, want the first %d bytes of the reason kept", i, len(got), trim([]byte(got)), keep)
		}
	}
}

// admin is q's dead-letter admin; a queue without one fails the check.
func (x *qt) admin(q publishing.Queue) publishing.DeadLetterAdmin {
	x.t.Helper()
	a, ok := q.(publishing.DeadLetterAdmin)
	if !ok {
		x.t.Fatalf("queue %T does not implement publishing.DeadLetterAdmin", q)
	}
	return a
}

// bury sends body, has it delivered deliveries times and dead-letters it
// with DeadLetter; it returns the message id.
func (x *qt) bury(body []byte, deliveries int) string {
	x.t.Helper()
	id := x.send(body, 0)
	vis := 30 * x.u
	for i := 1; i <= deliveries; i++ {
		m, _ := x.one(vis, 5*x.u, fmt.Sprintf("delivery %d of %q", i, body))
		if m.ID != id {
			x.t.Fatalf("delivery %d: got message %s, want %s", i, m.ID, id)
		}
		var err error
		if i < deliveries {
			err = x.q.Retry(x.t.Context(), m.Receipt, 0)
		} else {
			err = x.q.DeadLetter(x.t.Context(), m.Receipt, "poison: "+string(body))
		}
		if err != nil {
			x.t.Fatalf("delivery %d of %q: %v", i, body, err)
		}
	}
	return id
}

// wantDeadIDs checks that DeadLetters lists exactly ids, in order.
func (x *qt) wantDeadIDs(q publishing.Queue, what string, ids ...string) {
	x.t.Helper()
	dl, err := q.DeadLetters(x.t.Context(), 10)
	if err != nil {
		x.t.Fatalf("%s: DeadLetters = %v", what, err)
	}
	var got []string
	for _, d := range dl {
		got = append(got, d.ID)
	}
	if !slices.Equal(got, ids) {
		x.t.Errorf("%s: DeadLetters lists %v, want %v", what, got, ids)
	}
}

// wantNotFound checks that err wraps publishing.ErrMessageNotFound.
func (x *qt) wantNotFound(err error, what string) {
	x.t.Helper()
	if !errors.Is(err, publishing.ErrMessageNotFound) {
		x.t.Errorf("%s = %v, want publishing.ErrMessageNotFound", what, err)
	}
}

// A redriven dead letter is delivered again at once, with its id and body,
// as if for the first time; it is no longer a dead letter, and the others
// stay.
func queueRedrive(x *qt) {
	a := x.admin(x.queue(defaultMaxReceives))
	keep := x.bury([]byte("stays dead"), 1)
	body := []byte("redrive me")
	id := x.bury(body, 2)
	x.wantDeadIDs(x.q, "before Redrive", keep, id)
	if err := a.Redrive(x.t.Context(), id); err != nil {
		x.t.Fatalf("Redrive(%s) = %v, want nil", id, err)
	}
	x.wantDeadIDs(x.q, "after Redrive", keep)
	vis := 30 * x.u
	m, _ := x.one(vis, 5*x.u, "after Redrive")
	wantDelivery(x.t, m, id, body, 1, "first delivery after Redrive")
	x.wantNotFound(a.Redrive(x.t.Context(), id), "second Redrive of "+id)
	x.ack(m.Receipt, "delivery after Redrive")
	x.none(vis, "after the redriven message was acked")
	x.wantDeadIDs(x.q, "after the redriven message was acked", keep)
}

// A dropped dead letter is gone: not listed, not delivered, not found again.
func queueDrop(x *qt) {
	a := x.admin(x.queue(defaultMaxReceives))
	keep := x.bury([]byte("stays dead"), 1)
	id := x.bury([]byte("drop me"), 1)
	if err := a.Drop(x.t.Context(), id); err != nil {
		x.t.Fatalf("Drop(%s) = %v, want nil", id, err)
	}
	x.wantDeadIDs(x.q, "after Drop", keep)
	x.wantNotFound(a.Drop(x.t.Context(), id), "second Drop of "+id)
	x.wantNotFound(a.Redrive(x.t.Context(), id), "Redrive after Drop of "+id)
	x.quiet(x.u, 2*x.u, "after Drop")
	x.wantDeadIDs(x.q, "after Drop and a Redrive of the dropped id", keep)
}

// Redrive and Drop act only on this queue's dead letters: not on an
// unknown id, a message still queued, or another queue's dead letter.
func queueAdminNotFound(x *qt) {
	q := x.queue(defaultMaxReceives)
	a := x.admin(q)
	x.wantNotFound(a.Redrive(x.t.Context(), "no-such-message"), "Redrive(unknown id) on an empty queue")
	x.wantNotFound(a.Drop(x.t.Context(), "no-such-message"), "Drop(unknown id) on an empty queue")
	dead := x.bury([]byte("dead here"), 1)
	live := x.send([]byte("still queued"), 0)
	x.wantNotFound(a.Redrive(x.t.Context(), live), "Redrive(id of a queued message)")
	x.wantNotFound(a.Drop(x.t.Context(), live), "Drop(id of a queued message)")
	x.wantNotFound(a.Redrive(x.t.Context(), "no-such-message"), "Redrive(unknown id)")

	var other publishing.Queue
	if x.sibling != nil {
		other = x.sibling(q)
	} else {
		other = x.newQ(defaultMaxReceives)
	}
	oa := x.admin(other)
	x.wantNotFound(oa.Redrive(x.t.Context(), dead), "another queue's Redrive(this queue's dead letter)")
	x.wantNotFound(oa.Drop(x.t.Context(), dead), "another queue's Drop(this queue's dead letter)")
	x.wantDeadIDs(q, "after another queue's Redrive and Drop", dead)
	x.wantDeadIDs(other, "the other queue")
	ms, err := other.Receive(x.t.Context(), 10, x.u)
	if err != nil || len(ms) != 0 {
		x.t.Errorf("the other queue's Receive = %d messages, %v; want none, nil", len(ms), err)
	}
	m, _ := x.one(30*x.u, 5*x.u, "the queued message")
	wantDelivery(x.t, m, live, []byte("still queued"), 1, "the queued message after Redrive and Drop of its id")
}
