package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// ErrStaleReceipt is returned (wrapped) by Ack, Retry and DeadLetter when
// the receipt is not the message's current delivery: the message was
// delivered again since, or it is gone (acked or dead-lettered).
var ErrStaleReceipt = errors.New("stale receipt")

// ErrMessageTooLarge is returned (wrapped) by Send for a body over
// publishing.MaxMessageBytes.
var ErrMessageTooLarge = errors.New("message body too large")

// Reasons Receive gives the messages it dead-letters by itself.
const (
	// ReasonMaxReceives prefixes the reason of a message dead-lettered
	// because it was delivered its queue's maximum number of times.
	ReasonMaxReceives = "max_receives_exceeded"
	// ReasonUndecodable prefixes the reason of a stored message that
	// cannot be decoded (e.g. a time written in another format by another
	// program); the reason names the field and its stored value.
	ReasonUndecodable = "undecodable_message"
)

// visibleAtReadable is an SQL condition true exactly when a stored
// visible_at is a time sqltime.Decode reads: "" or text of
// sqltime.Layout's shape whose date and time exist (strftime gives back
// the same text; it is NULL or another day for 2026-13-01 or 2026-02-30).
// visibleAtUnreadable is its negation, the partial index
// queue_messages_undecodable's condition. Such a row is never visible by
// its text ("tomorrow" sorts after every time), or is by chance, so
// Receive looks for these rows through that index and dead-letters them.
const (
	visibleAtReadable = `(visible_at = '' OR (typeof(visible_at) = 'text' AND length(visible_at) = 30` +
		` AND visible_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]Z'` +
		` AND strftime('%Y-%m-%dT%H:%M:%S', substr(visible_at, 1, 19)) IS substr(visible_at, 1, 19)))`
	visibleAtUnreadable = `NOT ` + visibleAtReadable
)

// undecodableBatch is the most rows with an unreadable visible_at one
// Receive dead-letters (the next one takes the rest).
const undecodableBatch = 100

// cutMarker ends a text that was cut to a size limit.
const cutMarker = "… (cut)"

// maxValueBytes is how much of a stored value a reason quotes.
const maxValueBytes = 64

// Queue is a named at-least-once queue with visibility timeouts and a
// dead-letter queue, stored in the Store's file (SQS standard queue with a
// redrive policy). Receive and DeadLetter are each one BEGIN IMMEDIATE
// transaction and Ack and Retry one conditional statement on the receipt,
// so a message is delivered to one receiver at a time, across processes,
// and only its current receipt acts on it.
type Queue struct {
	s           *Store
	name        string
	maxReceives int
}

// Queue returns the queue called name. A message visible again after
// maxReceives deliveries is moved to the queue's dead-letter queue by the
// next Receive; maxReceives ≤ 0 never dead-letters automatically.
func (s *Store) Queue(name string, maxReceives int) *Queue {
	return &Queue{s: s, name: name, maxReceives: maxReceives}
}

// Send enqueues body, invisible for delay, and returns the message id. A
// body over publishing.MaxMessageBytes is refused with an error wrapping
// ErrMessageTooLarge.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) (string, error) {
	if len(body) > publishing.MaxMessageBytes {
		return "", fmt.Errorf("queue %s send: body of %d bytes is over the limit of %d bytes: %w",
			q.name, len(body), publishing.MaxMessageBytes, ErrMessageTooLarge)
	}
	id := randomHex(16)
	now := q.s.now()
	if body == nil {
		body = []byte{}
	}
	_, err := q.s.ws.queueInsert.ExecContext(ctx, q.name, id, body,
		sqltime.Encode(now), sqltime.Encode(now.Add(max(delay, 0))))
	if err != nil {
		return "", fmt.Errorf("queue %s send: %w", q.name, err)
	}
	q.s.queueWrites.Add(1)
	return id, nil
}

// NextVisible returns when the queue's next message becomes visible, so
// that a receiver can sleep until then instead of polling: the earliest
// visibility time of its messages (one in flight comes back when its
// visibility timeout ends; one already visible gives a time not after
// now), and false when the queue is empty. One read of the index on
// (queue, visible_at), from a read connection.
func (q *Queue) NextVisible(ctx context.Context) (time.Time, bool, error) {
	var at string
	switch err := q.s.rs.queueNextVisible.QueryRowContext(ctx, q.name).Scan(&at); {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("queue %s next visible: %w", q.name, err)
	}
	t, err := sqltime.Decode(at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("queue %s next visible: visible_at %q: %w", q.name, cut(at, maxValueBytes), err)
	}
	return t, true, nil
}

// visible is a message picked by Receive, decoded as far as it can be.
type visible struct {
	seq          int64
	id           string
	body         []byte
	sentAt       time.Time
	receiveCount int
	// undecodable says why the stored row cannot be delivered ("" if it
	// can): the field and its stored value.
	undecodable string
}

// Receive returns up to max visible messages, oldest visible first, and
// hides them for visibility; each delivery gets a new receipt. A visible
// message already delivered maxReceives times is moved to the dead-letter
// queue instead (ReasonMaxReceives), and so is a stored message whose
// fields cannot be decoded (ReasonUndecodable, naming the field and the
// stored value), a visible_at included, visible or not: one bad row never
// stops the others, and none is kept for ever. Each message it
// dead-letters is logged (a warning: queue, message id, reason; never the
// body). It does not block.
func (q *Queue) Receive(ctx context.Context, maxMessages int, visibility time.Duration) ([]publishing.Message, error) {
	if maxMessages <= 0 {
		return nil, nil
	}
	now := q.s.now()
	nowText := sqltime.Encode(now)
	hiddenUntil := sqltime.Encode(now.Add(max(visibility, 0)))
	// An empty poll is answered from a read connection, without taking the
	// write lock; a message that becomes visible meanwhile is left for the
	// next poll, as with any non-blocking receive.
	if ok, err := q.anyToReceive(ctx, nowText); err != nil || !ok {
		return nil, err
	}
	var (
		out  []publishing.Message
		dead []buried
	)
	changed := false
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		out, dead, changed = nil, nil, false
		var err error
		if dead, err = q.buryUndecodable(ctx, tx, nowText); err != nil {
			return err
		}
		changed = len(dead) > 0
		delivered := map[int64]bool{} // with visibility 0 a delivered message stays visible
		for len(out) < maxMessages {
			n := maxMessages - len(out) + len(delivered)
			batch, err := q.visible(ctx, tx, nowText, n)
			if err != nil {
				return err
			}
			progress := false
			for _, m := range batch {
				if delivered[m.seq] || len(out) == maxMessages {
					continue
				}
				progress, changed = true, true
				reason := ""
				switch {
				case m.undecodable != "":
					reason = ReasonUndecodable + ": " + m.undecodable
				case q.maxReceives > 0 && m.receiveCount >= q.maxReceives:
					reason = fmt.Sprintf("%s: delivered %d times", ReasonMaxReceives, m.receiveCount)
				}
				if reason != "" {
					if err := q.moveToDead(ctx, tx, m.seq, reason, nowText); err != nil {
						return err
					}
					dead = append(dead, buriedMessage(m.id, reason))
					continue
				}
				count := m.receiveCount + 1
				receipt := strconv.FormatInt(m.seq, 10) + "." + strconv.Itoa(count) + "." + randomHex(8)
				if _, err := tx.StmtContext(ctx, q.s.ws.queueDeliver).ExecContext(ctx, count, hiddenUntil, receipt, m.seq); err != nil {
					return err
				}
				delivered[m.seq] = true
				out = append(out, publishing.Message{ID: m.id, Body: m.body, ReceiveCount: count, Receipt: receipt, SentAt: m.sentAt})
			}
			// A short batch was every visible message; dead-lettering
			// makes none visible, so looking again finds nothing new.
			if !progress || len(batch) < n {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue %s receive: %w", q.name, err)
	}
	if changed {
		q.s.queueWrites.Add(1)
	}
	for _, b := range dead {
		q.s.log.WarnContext(ctx, "dead-lettered by receive", "queue", q.name, "message_id", b.id, "reason", b.reason)
	}
	return out, nil
}

// buried is a message Receive dead-lettered by itself, for its log line.
type buried struct{ id, reason string }

// buriedMessage is the log line's message id and reason, the reason cut
// as the dead-letter table keeps it.
func buriedMessage(id, reason string) buried {
	return buried{id: id, reason: cut(reason, publishing.MaxReasonBytes)}
}

// anyToReceive tells, from a read connection and without the write lock,
// whether Receive has anything to do: a visible message, or one whose
// visible_at cannot be read.
func (q *Queue) anyToReceive(ctx context.Context, now string) (bool, error) {
	var one int
	err := q.s.rs.queueAnyVisible.QueryRowContext(ctx, q.name, now).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		err = q.s.rs.queueAnyUndecodable.QueryRowContext(ctx, q.name).Scan(&one)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("queue %s receive: %w", q.name, err)
	}
	return true, nil
}

// buryUndecodable dead-letters up to undecodableBatch messages whose
// visible_at cannot be read (ReasonUndecodable, naming the field and the
// stored value), found through their partial index.
func (q *Queue) buryUndecodable(ctx context.Context, tx *sql.Tx, now string) ([]buried, error) {
	rows, err := tx.StmtContext(ctx, q.s.ws.queueUndecodable).QueryContext(ctx, q.name, undecodableBatch)
	if err != nil {
		return nil, err
	}
	type row struct {
		seq    int64
		id     string
		reason string
	}
	var found []row
	for rows.Next() {
		var r row
		var visibleAt any
		if err := rows.Scan(&r.seq, &r.id, &visibleAt); err != nil {
			rows.Close()
			return nil, err
		}
		r.reason = ReasonUndecodable + ": " + badValue("visible_at", visibleAt, "a time like "+sqltime.Layout)
		found = append(found, r)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []buried
	for _, r := range found {
		if err := q.moveToDead(ctx, tx, r.seq, r.reason, now); err != nil {
			return nil, err
		}
		out = append(out, buriedMessage(r.id, r.reason))
	}
	return out, nil
}

// Depth counts the queue's messages by where they are, in one snapshot:
// a range of queue_messages_visible on each side of now, the partial
// index of undecodable rows, and dead_letters_queue. The cost grows with
// the queue's messages, never with other queues'.
func (q *Queue) Depth(ctx context.Context) (publishing.QueueDepth, error) {
	var d publishing.QueueDepth
	now := sqltime.Encode(q.s.now())
	tx, err := q.s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return d, fmt.Errorf("queue %s depth: %w", q.name, err)
	}
	defer tx.Rollback()
	for _, c := range []struct {
		st   *sql.Stmt
		args []any
		dst  []any
	}{
		{q.s.rs.queueVisibleCount, []any{q.name, now}, []any{&d.Visible}},
		{q.s.rs.queueHiddenCount, []any{q.name, now}, []any{&d.InFlight, &d.Delayed}},
		{q.s.rs.queueUndecodableCount, []any{q.name}, []any{&d.Undecodable}},
		{q.s.rs.deadCount, []any{q.name}, []any{&d.DeadLetters}},
	} {
		if err := tx.StmtContext(ctx, c.st).QueryRowContext(ctx, c.args...).Scan(c.dst...); err != nil {
			return publishing.QueueDepth{}, fmt.Errorf("queue %s depth: %w", q.name, err)
		}
	}
	return d, nil
}

// visible lists up to n visible messages in delivery order. A row whose
// fields cannot be decoded is listed with the reason, not an error.
func (q *Queue) visible(ctx context.Context, tx *sql.Tx, now string, n int) ([]visible, error) {
	rows, err := tx.StmtContext(ctx, q.s.ws.queueVisible).QueryContext(ctx, q.name, now, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var batch []visible
	for rows.Next() {
		var m visible
		var sentAt string
		var count any
		if err := rows.Scan(&m.seq, &m.id, &m.body, &sentAt, &count); err != nil {
			return nil, err
		}
		var ok bool
		if m.sentAt, err = sqltime.Decode(sentAt); err != nil {
			m.undecodable = badValue("sent_at", sentAt, "a time like "+sqltime.Layout)
		} else if m.receiveCount, ok = storedCount(count); !ok {
			m.undecodable = badValue("receive_count", count, "a count")
		}
		batch = append(batch, m)
	}
	return batch, rows.Err()
}

// storedCount decodes a stored receive count: a non-negative integer.
func storedCount(v any) (int, bool) {
	n, ok := v.(int64)
	if !ok || n < 0 {
		return 0, false
	}
	return int(n), true
}

// badValue explains an undecodable stored field: its name, its value (cut
// to maxValueBytes and quoted) and what was expected.
func badValue(field string, v any, want string) string {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case []byte:
		text = string(v)
	case nil:
		text = "NULL"
	default:
		text = fmt.Sprint(v)
	}
	return fmt.Sprintf("%s %q is not %s", field, cut(text, maxValueBytes), want)
}

// cut returns s if it has at most n bytes; otherwise its longest prefix
// that leaves room for cutMarker and ends on a UTF-8 boundary, followed by
// cutMarker, n bytes at most in all.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := max(n-len(cutMarker), 0)
	// Back up to the start of the rune that would be split; a longer run
	// of continuation bytes is invalid UTF-8 already and is cut as is.
	for i := 0; i < utf8.UTFMax-1 && end > 0 && !utf8.RuneStart(s[end]); i++ {
		end--
	}
	return s[:end] + cutMarker
}

// moveToDead moves a message to the dead-letter table with a reason, cut
// to publishing.MaxReasonBytes.
func (q *Queue) moveToDead(ctx context.Context, tx *sql.Tx, seq int64, reason, at string) error {
	reason = cut(reason, publishing.MaxReasonBytes)
	if _, err := tx.StmtContext(ctx, q.s.ws.queueToDead).ExecContext(ctx, reason, at, seq); err != nil {
		return err
	}
	_, err := tx.StmtContext(ctx, q.s.ws.queueDelete).ExecContext(ctx, seq)
	return err
}

// Ack deletes a delivered message. A receipt that is not the message's
// current delivery is refused with an error wrapping ErrStaleReceipt.
func (q *Queue) Ack(ctx context.Context, receipt string) error {
	seq, err := receiptSeq(receipt)
	if err != nil {
		return fmt.Errorf("queue %s ack: %w", q.name, err)
	}
	res, err := q.s.ws.queueAck.ExecContext(ctx, seq, q.name, receipt)
	if err == nil {
		err = q.affected(ctx, res, seq)
	}
	if err != nil {
		return fmt.Errorf("queue %s ack #%d: %w", q.name, seq, err)
	}
	q.s.queueWrites.Add(1)
	return nil
}

// Retry makes a delivered message visible again after delay. A stale
// receipt is refused with an error wrapping ErrStaleReceipt.
func (q *Queue) Retry(ctx context.Context, receipt string, delay time.Duration) error {
	seq, err := receiptSeq(receipt)
	if err != nil {
		return fmt.Errorf("queue %s retry: %w", q.name, err)
	}
	at := sqltime.Encode(q.s.now().Add(max(delay, 0)))
	res, err := q.s.ws.queueRetry.ExecContext(ctx, at, seq, q.name, receipt)
	if err == nil {
		err = q.affected(ctx, res, seq)
	}
	if err != nil {
		return fmt.Errorf("queue %s retry #%d: %w", q.name, seq, err)
	}
	q.s.queueWrites.Add(1)
	return nil
}

// DeadLetter moves a delivered message to the dead-letter queue with a
// reason; a reason over publishing.MaxReasonBytes is cut, on a UTF-8
// boundary, and ends with "… (cut)". A stale receipt is refused with an
// error wrapping ErrStaleReceipt.
func (q *Queue) DeadLetter(ctx context.Context, receipt, reason string) error {
	seq, err := receiptSeq(receipt)
	if err != nil {
		return fmt.Errorf("queue %s dead-letter: %w", q.name, err)
	}
	at := sqltime.Encode(q.s.now())
	err = q.s.write(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.StmtContext(ctx, q.s.ws.queueByReceipt).QueryRowContext(ctx, seq, q.name, receipt).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return q.stale(ctx, tx, seq)
		}
		if err != nil {
			return err
		}
		return q.moveToDead(ctx, tx, seq, reason, at)
	})
	if err != nil {
		return fmt.Errorf("queue %s dead-letter #%d: %w", q.name, seq, err)
	}
	q.s.queueWrites.Add(1)
	return nil
}

// affected checks that a write by receipt found its message.
func (q *Queue) affected(ctx context.Context, res sql.Result, seq int64) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	return q.stale(ctx, nil, seq)
}

// stale explains why a receipt did not match: the message was delivered
// again, or it is gone.
func (q *Queue) stale(ctx context.Context, tx *sql.Tx, seq int64) error {
	st := q.s.ws.queueCurrent
	if tx != nil {
		st = tx.StmtContext(ctx, st)
	}
	var count int
	err := st.QueryRowContext(ctx, seq, q.name).Scan(&count)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("message is gone: %w", ErrStaleReceipt)
	case err != nil:
		return err
	}
	return fmt.Errorf("message was delivered again (%d deliveries): %w", count, ErrStaleReceipt)
}

// DeadLetters lists the queue's dead-lettered messages, oldest first. A
// limit ≤ 0 means no limit.
//
// A row whose time or receive count cannot be decoded (written in another
// form by another program) is still listed, never skipped and never an
// error for the whole list: an operator must see every dead letter. Its At
// (or ReceiveCount) is then zero and its Reason ends with the stored value,
// e.g. ` [at "14/03/2026" is not a time like …]`.
func (q *Queue) DeadLetters(ctx context.Context, limit int) ([]publishing.DeadLetter, error) {
	rows, err := q.s.rs.deadLetters.QueryContext(ctx, q.name, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("queue %s dead letters: %w", q.name, err)
	}
	defer rows.Close()
	var out []publishing.DeadLetter
	for rows.Next() {
		var d publishing.DeadLetter
		var count any
		var at string
		if err := rows.Scan(&d.ID, &d.Body, &count, &d.Reason, &at); err != nil {
			return nil, fmt.Errorf("queue %s dead letters: %w", q.name, err)
		}
		var ok bool
		if d.ReceiveCount, ok = storedCount(count); !ok {
			d.Reason += " [" + badValue("receive_count", count, "a count") + "]"
		}
		if d.At, err = sqltime.Decode(at); err != nil {
			d.Reason += " [" + badValue("at", at, "a time like "+sqltime.Layout) + "]"
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue %s dead letters: %w", q.name, err)
	}
	return out, nil
}

// Redrive moves the dead letter with message id id back to this queue, in
// one transaction: a new message with the same id and body, visible at
// once, with receive count 0 (its next delivery is its first) and SentAt
// the time of the redrive; the dead letter is deleted. A crash leaves it
// either dead-lettered or queued, never both and never neither. An id that
// is not among this queue's dead letters (another queue's, or redriven or
// dropped already) gives an error wrapping publishing.ErrMessageNotFound.
func (q *Queue) Redrive(ctx context.Context, id string) error {
	now := sqltime.Encode(q.s.now())
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		seq, err := q.deadSeq(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, q.s.ws.deadRedrive).ExecContext(ctx, now, seq); err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, q.s.ws.deadDelete).ExecContext(ctx, seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("queue %s redrive %s: %w", q.name, id, err)
	}
	q.s.queueWrites.Add(1)
	return nil
}

// Drop deletes the dead letter with message id id for good. An id that is
// not among this queue's dead letters gives an error wrapping
// publishing.ErrMessageNotFound.
func (q *Queue) Drop(ctx context.Context, id string) error {
	err := q.s.write(ctx, func(tx *sql.Tx) error {
		seq, err := q.deadSeq(ctx, tx, id)
		if err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, q.s.ws.deadDelete).ExecContext(ctx, seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("queue %s drop %s: %w", q.name, id, err)
	}
	q.s.queueWrites.Add(1)
	return nil
}

// deadSeq finds this queue's dead letter with message id id (the oldest,
// should there ever be two).
func (q *Queue) deadSeq(ctx context.Context, tx *sql.Tx, id string) (int64, error) {
	var seq int64
	err := tx.StmtContext(ctx, q.s.ws.deadFind).QueryRowContext(ctx, q.name, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, publishing.ErrMessageNotFound
	}
	return seq, err
}

// receiptSeq is the row a receipt ("seq.count.random") belongs to. The
// receipt itself must still match the row's: seq alone proves nothing.
func receiptSeq(receipt string) (int64, error) {
	head, rest, ok := strings.Cut(receipt, ".")
	seq, err := strconv.ParseInt(head, 10, 64)
	if !ok || rest == "" || err != nil {
		return 0, fmt.Errorf("malformed receipt: %w", ErrStaleReceipt)
	}
	return seq, nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
