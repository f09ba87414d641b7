package sqlitestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

func receiveOne(t *testing.T, q *Queue, visibility time.Duration) publishing.Message {
	t.Helper()
	msgs, err := q.Receive(context.Background(), 10, visibility)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("Receive returned %d messages, want 1", len(msgs))
	}
	return msgs[0]
}

func receiveNone(t *testing.T, q *Queue, when string) {
	t.Helper()
	msgs, err := q.Receive(context.Background(), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Fatalf("%s: Receive returned %d messages, want none", when, len(msgs))
	}
}

func TestQueueFakeClock(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	q := s.Queue("publish", 3)
	other := s.Queue("other", 3)

	idA, err := q.Send(ctx, []byte("a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	idB, err := q.Send(ctx, []byte("b"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if idA == idB || idA == "" {
		t.Fatalf("ids %q and %q", idA, idB)
	}
	receiveNone(t, other, "another queue")

	// Visibility: a is delivered and hidden for 30 s; b is delayed 10 s.
	a1 := receiveOne(t, q, 30*time.Second)
	if a1.ID != idA || string(a1.Body) != "a" || a1.ReceiveCount != 1 || !a1.SentAt.Equal(t0) {
		t.Fatalf("first delivery %+v", a1)
	}
	receiveNone(t, q, "a hidden, b delayed")
	clock.Advance(10*time.Second - 1)
	receiveNone(t, q, "1ns before b's delay ends")
	clock.Advance(1)
	b1 := receiveOne(t, q, 30*time.Second)
	if b1.ID != idB || !b1.SentAt.Equal(t0) {
		t.Fatalf("delayed delivery %+v", b1)
	}
	if err := q.Ack(ctx, b1.Receipt); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(ctx, b1.Receipt); !errors.Is(err, ErrStaleReceipt) {
		t.Errorf("second Ack: %v, want ErrStaleReceipt", err)
	}

	// Redelivery after the visibility timeout, with a new receipt.
	clock.Advance(20 * time.Second)
	a2 := receiveOne(t, q, 30*time.Second)
	if a2.ID != idA || a2.ReceiveCount != 2 || a2.Receipt == a1.Receipt {
		t.Fatalf("redelivery %+v (first receipt %s)", a2, a1.Receipt)
	}
	for name, op := range map[string]func() error{
		"Ack":        func() error { return q.Ack(ctx, a1.Receipt) },
		"Retry":      func() error { return q.Retry(ctx, a1.Receipt, 0) },
		"DeadLetter": func() error { return q.DeadLetter(ctx, a1.Receipt, "x") },
	} {
		if err := op(); !errors.Is(err, ErrStaleReceipt) {
			t.Errorf("%s with a stale receipt: %v, want ErrStaleReceipt", name, err)
		}
	}
	if err := other.Ack(ctx, a2.Receipt); !errors.Is(err, ErrStaleReceipt) {
		t.Errorf("Ack on the wrong queue: %v, want ErrStaleReceipt", err)
	}

	// Retry with a delay.
	if err := q.Retry(ctx, a2.Receipt, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Second)
	receiveNone(t, q, "during retry delay")
	clock.Advance(time.Second)
	a3 := receiveOne(t, q, 30*time.Second)
	if a3.ReceiveCount != 3 {
		t.Fatalf("third delivery count %d", a3.ReceiveCount)
	}

	// Delivered maxReceives (3) times and visible again: dead-lettered.
	clock.Advance(30 * time.Second)
	receiveNone(t, q, "after the third delivery timed out")
	dead, err := q.DeadLetters(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []publishing.DeadLetter{{ID: idA, Body: []byte("a"), ReceiveCount: 3,
		Reason: "max_receives_exceeded: delivered 3 times", At: clock.Now()}}
	if d := cmp.Diff(want, dead); d != "" {
		t.Errorf("DeadLetters (-want +got):\n%s", d)
	}
	if err := q.Ack(ctx, a3.Receipt); !errors.Is(err, ErrStaleReceipt) {
		t.Errorf("Ack after dead-lettering: %v, want ErrStaleReceipt", err)
	}

	// Explicit dead-lettering, oldest first.
	idC, _ := q.Send(ctx, []byte("c"), 0)
	c1 := receiveOne(t, q, time.Minute)
	clock.Advance(time.Second)
	if err := q.DeadLetter(ctx, c1.Receipt, "poison"); err != nil {
		t.Fatal(err)
	}
	dead, _ = q.DeadLetters(ctx, 0)
	if len(dead) != 2 || dead[1].ID != idC || dead[1].Reason != "poison" || dead[1].ReceiveCount != 1 || !dead[1].At.Equal(clock.Now()) {
		t.Errorf("DeadLetters after DeadLetter: %+v", dead)
	}
	if dl, _ := other.DeadLetters(ctx, 0); len(dl) != 0 {
		t.Errorf("other queue has %d dead letters", len(dl))
	}
	if _, err := q.Receive(ctx, 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	receiveNone(t, q, "everything acked or dead")
}

func TestQueueOrderAndBatches(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	q := s.Queue("q", 2)
	var ids []string
	for i := range 5 {
		// Later sends with shorter delays become visible first.
		id, err := q.Send(ctx, fmt.Appendf(nil, "m%d", i), time.Duration(5-i)*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	clock.Advance(10 * time.Second)
	msgs, err := q.Receive(ctx, 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.ID)
	}
	if d := cmp.Diff([]string{ids[4], ids[3], ids[2]}, got); d != "" {
		t.Errorf("first batch (-want +got):\n%s", d)
	}
	// Second batch: m1 and m0 (never delivered, visible since long) come
	// first, then m2, m3, m4 (visible again, same instant, send order).
	clock.Advance(time.Second)
	msgs, err = q.Receive(ctx, 5, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, m := range msgs {
		got = append(got, m.ID)
	}
	if d := cmp.Diff([]string{ids[1], ids[0], ids[2], ids[3], ids[4]}, got); d != "" {
		t.Fatalf("second batch (-want +got):\n%s", d)
	}
	for _, m := range msgs[:2] {
		if err := q.Retry(ctx, m.Receipt, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// m2, m3, m4 were delivered maxReceives (2) times and are visible
	// first: the next Receive dead-letters them and still fills its batch
	// with m0 and m1.
	clock.Advance(5 * time.Second)
	msgs, err = q.Receive(ctx, 2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].ID != ids[0] || msgs[1].ID != ids[1] || msgs[0].ReceiveCount != 2 {
		t.Errorf("third batch: %+v, want m0 and m1 on their second delivery", msgs)
	}
	dead, _ := q.DeadLetters(ctx, 0)
	got = nil
	for _, d := range dead {
		got = append(got, d.ID)
	}
	if d := cmp.Diff([]string{ids[2], ids[3], ids[4]}, got); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}

	// Visibility 0: a message stays visible but is delivered once per Receive.
	q0 := s.Queue("zero", 0)
	if _, err := q0.Send(ctx, []byte("z"), 0); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		msgs, err := q0.Receive(ctx, 10, 0)
		if err != nil || len(msgs) != 1 || msgs[0].ReceiveCount != i {
			t.Fatalf("zero-visibility receive %d: %+v, %v", i, msgs, err)
		}
	}
}

func TestQueueConcurrentReceiversGetEachMessageOnce(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	q := s.Queue("q", 5)
	const n = 300
	for i := range n {
		if _, err := q.Send(ctx, fmt.Appendf(nil, "%d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				msgs, err := q.Receive(ctx, 4, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(msgs) == 0 {
					return
				}
				for _, m := range msgs {
					mu.Lock()
					seen[m.ID]++
					mu.Unlock()
					if err := q.Ack(ctx, m.Receipt); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct messages received, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("message %s received %d times", id, c)
		}
	}
}

// A stored message whose fields cannot be decoded (written by another
// program, or by hand) is dead-lettered by Receive with the field and the
// stored value in the reason; the other messages are delivered.
func TestReceiveDeadLettersUndecodableMessages(t *testing.T) {
	long := strings.Repeat("garbage-", 40)
	for _, tc := range []struct {
		name       string
		corrupt    string // SQL run on the middle message, ?1 = its id
		wantReason string
		wantCount  int
	}{
		{"sent_at in another format", `UPDATE queue_messages SET sent_at = '2026-03-14 09:26:53' WHERE id = ?1`,
			ReasonUndecodable + `: sent_at "2026-03-14 09:26:53" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
		{"sent_at as Unix seconds", `UPDATE queue_messages SET sent_at = 1773480413 WHERE id = ?1`,
			ReasonUndecodable + `: sent_at "1773480413" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
		{"long sent_at", `UPDATE queue_messages SET sent_at = '` + long + `' WHERE id = ?1`,
			ReasonUndecodable + `: sent_at "` + cut(long, maxValueBytes) + `" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
		{"receive_count as text", `UPDATE queue_messages SET receive_count = 'twice' WHERE id = ?1`,
			ReasonUndecodable + `: receive_count "twice" is not a count`, 0},
		{"negative receive_count", `UPDATE queue_messages SET receive_count = -3 WHERE id = ?1`,
			ReasonUndecodable + `: receive_count "-3" is not a count`, 0},
		{"receive_count as a real", `UPDATE queue_messages SET receive_count = 2.5 WHERE id = ?1`,
			ReasonUndecodable + `: receive_count "2.5" is not a count`, 2},
		// A visible_at that cannot be read is never visible by its text
		// (or is, by chance): it is dead-lettered either way.
		{"visible_at in words", `UPDATE queue_messages SET visible_at = 'tomorrow' WHERE id = ?1`,
			ReasonUndecodable + `: visible_at "tomorrow" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
		{"visible_at with a one-digit month", `UPDATE queue_messages SET visible_at = '2026-3-14T09:26:53Z' WHERE id = ?1`,
			ReasonUndecodable + `: visible_at "2026-3-14T09:26:53Z" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
		{"visible_at on a day that does not exist", `UPDATE queue_messages SET visible_at = '2026-02-30T09:26:53.000000000Z' WHERE id = ?1`,
			ReasonUndecodable + `: visible_at "2026-02-30T09:26:53.000000000Z" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
		{"visible_at as bytes", `UPDATE queue_messages SET visible_at = x'323032362d' WHERE id = ?1`,
			ReasonUndecodable + `: visible_at "2026-" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
		{"visible_at as Unix seconds", `UPDATE queue_messages SET visible_at = 1773480413 WHERE id = ?1`,
			ReasonUndecodable + `: visible_at "1773480413" is not a time like 2006-01-02T15:04:05.000000000Z`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := clocktest.New(t0)
			s := openTest(t, Options{Now: clock.Now})
			q := s.Queue("publish", 5)
			var ids []string
			for i := range 3 {
				id, err := q.Send(ctx, fmt.Appendf(nil, "m%d", i), 0)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if _, err := s.w.Exec(tc.corrupt, ids[1]); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			msgs, err := q.Receive(ctx, 10, time.Minute)
			if err != nil {
				t.Fatalf("Receive with an undecodable message = %v, want nil", err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, m.ID)
			}
			if d := cmp.Diff([]string{ids[0], ids[2]}, got); d != "" {
				t.Errorf("delivered (-want +got):\n%s", d)
			}
			dead, err := q.DeadLetters(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := []publishing.DeadLetter{{ID: ids[1], Body: []byte("m1"), ReceiveCount: tc.wantCount, Reason: tc.wantReason, At: clock.Now()}}
			if d := cmp.Diff(want, dead); d != "" {
				t.Errorf("DeadLetters (-want +got):\n%s", d)
			}
			clock.Advance(2 * time.Minute)
			if msgs, err := q.Receive(ctx, 10, time.Minute); err != nil || len(msgs) != 2 {
				t.Errorf("next Receive = %d messages, %v; want the 2 good ones again", len(msgs), err)
			}
		})
	}
}

func TestSendRefusesOversizedBody(t *testing.T) {
	ctx := context.Background()
	q := openTest(t, Options{}).Queue("publish", 5)
	for _, tc := range []struct {
		size    int
		refused bool
	}{
		{publishing.MaxMessageBytes, false},
		{publishing.MaxMessageBytes + 1, true},
		{10 << 20, true},
	} {
		_, err := q.Send(ctx, make([]byte, tc.size), 0)
		if !tc.refused {
			if err != nil {
				t.Errorf("Send(%d bytes) = %v, want nil", tc.size, err)
			}
			continue
		}
		if !errors.Is(err, ErrMessageTooLarge) {
			t.Errorf("Send(%d bytes) = %v, want ErrMessageTooLarge", tc.size, err)
			continue
		}
		for _, n := range []int{tc.size, publishing.MaxMessageBytes} {
			if !strings.Contains(err.Error(), strconv.Itoa(n)) {
				t.Errorf("Send(%d bytes) error %q does not say %d", tc.size, err, n)
			}
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 10, "abc"},
		{"exactly n", "abcdefghij", 10, "abcdefghij"},
		{"ascii", "abcdefghijklmnop", 12, "abc" + cutMarker}, // the marker is 9 bytes
		{"rune ends at the boundary", "ab€€€€€", 14, "ab€" + cutMarker},
		{"rune split after its first byte", "a€€€€€", 12, "a" + cutMarker},
		{"rune split after its second byte", "a€€€€€", 11, "a" + cutMarker},
		{"4-byte rune split after its third byte", "a🎉🎉🎉🎉", 13, "a" + cutMarker},
		{"n smaller than the marker", "abcdefghijklmnop", 3, cutMarker},
		{"invalid UTF-8 run", "a" + strings.Repeat("\x80", 20), 16, "a\x80\x80\x80" + cutMarker},
	} {
		got := cut(tc.s, tc.n)
		if got != tc.want {
			t.Errorf("%s: cut(%q, %d) = %q, want %q", tc.name, tc.s, tc.n, got, tc.want)
		}
	}
}

// Reasons over publishing.MaxReasonBytes are cut, whoever gives them.
func TestDeadLetterReasonsAreCut(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	q := s.Queue("publish", 5)
	if _, err := q.Send(ctx, []byte("m"), 0); err != nil {
		t.Fatal(err)
	}
	m := receiveOne(t, q, time.Minute)
	long := "é" + strings.Repeat("€", publishing.MaxReasonBytes)
	if err := q.DeadLetter(ctx, m.Receipt, long); err != nil {
		t.Fatal(err)
	}
	dead, err := q.DeadLetters(ctx, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadLetters = %d, %v", len(dead), err)
	}
	got := dead[0].Reason
	if want := cut(long, publishing.MaxReasonBytes); got != want || len(got) > publishing.MaxReasonBytes ||
		!strings.HasSuffix(got, cutMarker) || !utf8.ValidString(got) {
		t.Errorf("reason of %d bytes stored as %d bytes ending %q, want %d bytes at most, valid UTF-8, ending %q",
			len(long), len(got), got[len(got)-20:], publishing.MaxReasonBytes, cutMarker)
	}
}

// DeadLetters lists a dead letter whose time or count cannot be decoded
// with a zero At or ReceiveCount and the stored value in the reason,
// instead of failing the whole list.
func TestDeadLettersListUndecodableRows(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	q := s.Queue("publish", 5)
	for i := range 3 {
		if _, err := q.Send(ctx, fmt.Appendf(nil, "m%d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range receiveN(t, q, 3) {
		if err := q.DeadLetter(ctx, m.Receipt, "poison "+string(m.Body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		`UPDATE dead_letters SET at = '14/03/2026 09:26' WHERE reason = 'poison m0'`,
		`UPDATE dead_letters SET receive_count = 'many' WHERE reason = 'poison m2'`,
	} {
		if _, err := s.w.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := q.DeadLetters(ctx, 0)
	if err != nil {
		t.Fatalf("DeadLetters with undecodable rows = %v, want nil", err)
	}
	type row struct {
		Body   string
		Count  int
		Reason string
		At     time.Time
	}
	var got []row
	for _, d := range dead {
		got = append(got, row{string(d.Body), d.ReceiveCount, d.Reason, d.At})
	}
	want := []row{
		{"m0", 1, `poison m0 [at "14/03/2026 09:26" is not a time like 2006-01-02T15:04:05.000000000Z]`, time.Time{}},
		{"m1", 1, "poison m1", t0},
		{"m2", 0, `poison m2 [receive_count "many" is not a count]`, t0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("DeadLetters (-want +got):\n%s", d)
	}
}

func receiveN(t *testing.T, q *Queue, n int) []publishing.Message {
	t.Helper()
	msgs, err := q.Receive(context.Background(), n, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != n {
		t.Fatalf("Receive returned %d messages, want %d", len(msgs), n)
	}
	return msgs
}

// Receive logs every message it dead-letters by itself, with the queue,
// the message id and the reason (never the body): an undecodable row or
// one delivered too often must not vanish from the queue unseen.
func TestReceiveLogsWhatItDeadLetters(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	var logs bytes.Buffer
	s := openTest(t, Options{Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	q := s.Queue("publish", 1)
	bad, err := q.Send(ctx, []byte("secret body"), 0)
	if err != nil {
		t.Fatal(err)
	}
	tired, err := q.Send(ctx, []byte("secret body"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`UPDATE queue_messages SET visible_at = 'tomorrow' WHERE id = ?1`, bad); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if msgs, err := q.Receive(ctx, 10, time.Minute); err != nil || len(msgs) != 1 || msgs[0].ID != tired {
		t.Fatalf("first Receive = %v, %v; want %s alone", msgs, err, tired)
	}
	clock.Advance(2 * time.Minute)
	if msgs, err := q.Receive(ctx, 10, time.Minute); err != nil || len(msgs) != 0 {
		t.Fatalf("second Receive = %v, %v; want nothing (the message was delivered its maximum)", msgs, err)
	}
	type line struct {
		Level, Msg, Queue, Reason string
		MessageID                 string `json:"message_id"`
	}
	var got []line
	for _, raw := range bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("log line %s: %v", raw, err)
		}
		got = append(got, l)
	}
	want := []line{
		{Level: "WARN", Msg: "dead-lettered by receive", Queue: "publish", MessageID: bad,
			Reason: ReasonUndecodable + `: visible_at "tomorrow" is not a time like 2006-01-02T15:04:05.000000000Z`},
		{Level: "WARN", Msg: "dead-lettered by receive", Queue: "publish", MessageID: tired, Reason: ReasonMaxReceives + ": delivered 1 times"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
	if bytes.Contains(logs.Bytes(), []byte("secret body")) {
		t.Errorf("a log line holds a message body: %s", logs.String())
	}
}

// Depth counts a queue's messages by where they are, undecodable ones
// apart, and its dead letters: what `oncepost status` shows.
func TestQueueDepth(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	q := s.Queue("publish", 5)
	send := func(delay time.Duration) string {
		id, err := q.Send(ctx, []byte("m"), delay)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for range 3 {
		send(0)
	}
	send(time.Hour)
	bad := send(0)
	if _, err := s.w.Exec(`UPDATE queue_messages SET visible_at = 'tomorrow' WHERE id = ?1`, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Queue("other", 5).Send(ctx, []byte("m"), 0); err != nil {
		t.Fatal(err)
	}
	got, err := q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(publishing.QueueDepth{Visible: 3, Delayed: 1, Undecodable: 1}, got); d != "" {
		t.Errorf("Depth before a receive (-want +got):\n%s", d)
	}
	msgs, err := q.Receive(ctx, 2, time.Minute)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("Receive = %d, %v", len(msgs), err)
	}
	if err := q.DeadLetter(ctx, msgs[1].Receipt, "refused"); err != nil {
		t.Fatal(err)
	}
	got, err = q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(publishing.QueueDepth{Visible: 1, InFlight: 1, Delayed: 1, DeadLetters: 2}, got); d != "" {
		t.Errorf("Depth after a receive (-want +got):\n%s", d)
	}
}

// visibleAtReadable, the SQL behind the index of undecodable rows, agrees
// with sqltime.Decode on every value: times across the years a Layout
// can hold, leap days, and text that is almost a time.
func TestVisibleAtReadableMatchesDecode(t *testing.T) {
	s := openTest(t, Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	values := []any{"", "tomorrow", "2026-3-14T09:26:53Z", "2026-02-30T09:26:53.000000000Z", "2026-13-01T00:00:00.000000000Z",
		"2026-03-14T24:00:00.000000000Z", "2026-03-14T23:60:00.000000000Z", "2026-03-14T23:59:60.000000000Z",
		"2024-02-29T00:00:00.000000000Z", "2025-02-29T00:00:00.000000000Z", "2026-03-14T09:26:53.000000000+", "2026-03-14 09:26:53.000000000Z",
		"0000-01-01T00:00:00.000000000Z", "9999-12-31T23:59:59.999999999Z", "2026-03-14T09:26:53.58979323Z ",
		[]byte("2026-03-14T09:26:53.589793238Z"), int64(1773480413), 1.5}
	for range 2000 {
		values = append(values, sqltime.Encode(time.Unix(rng.Int64N(253402300799), rng.Int64N(1e9))))
	}
	for _, v := range values {
		var got bool
		if err := s.r.QueryRow(`SELECT `+visibleAtReadable+` FROM (SELECT ? AS visible_at)`, v).Scan(&got); err != nil {
			t.Fatal(err)
		}
		text, isText := v.(string)
		want := false
		if isText {
			_, err := sqltime.Decode(text)
			want = err == nil
		}
		if got != want {
			t.Errorf("visible_at %#v: readable in SQL %v, by sqltime.Decode %v", v, got, want)
		}
	}
}

// TestQueueNextVisible: when the queue's next message becomes visible, so
// a receiver can sleep until then: none in an empty queue; the earliest
// delay; a message in flight comes back when its visibility ends; a
// message already visible is due now; other queues do not count.
func TestQueueNextVisible(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	q := s.Queue("publish", 3)
	if _, err := s.Queue("other", 3).Send(ctx, []byte("elsewhere"), time.Second); err != nil {
		t.Fatal(err)
	}
	type next struct {
		At time.Time
		OK bool
	}
	look := func() next {
		t.Helper()
		at, ok, err := q.NextVisible(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return next{at, ok}
	}
	var got []next
	got = append(got, look())
	for _, d := range []time.Duration{5 * time.Second, 2*time.Second + time.Millisecond} {
		if _, err := q.Send(ctx, []byte("later"), d); err != nil {
			t.Fatal(err)
		}
	}
	got = append(got, look())
	clock.Advance(3 * time.Second)
	receiveOne(t, q, 10*time.Second) // the 2 s one, hidden until t0+13s
	got = append(got, look())
	clock.Advance(3 * time.Second)
	got = append(got, look())
	want := []next{
		{},
		{t0.Add(2*time.Second + time.Millisecond), true},
		{t0.Add(5 * time.Second), true},
		{t0.Add(5 * time.Second), true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("next visible: empty, two delayed, one in flight, one visible (-want +got):\n%s", diff)
	}
}
