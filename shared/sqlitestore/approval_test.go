package sqlitestore

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
	"oncepost/shared/sqltime"
)

func TestApprovalsConformance(t *testing.T) {
	publishingtest.TestApprovals(t, func(t *testing.T) publishingtest.ApprovalStore { return openTest(t, Options{}) })
}

// uncondApprovals is the store with the approval's write stripped of its
// condition on needs_approval: the broken implementation the approval
// race must catch.
type uncondApprovals struct{ *Store }

func (u uncondApprovals) MoveApproval(ctx context.Context, id post.ID, account post.AccountID, m publishing.ApprovalMove) (post.Target, error) {
	err := u.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE targets SET status = ?, slot = ?, reason = ?, updated_at = ? WHERE post_id = ? AND account = ?`,
			string(m.Status), sqltime.Encode(m.Slot), m.Reason, sqltime.Encode(m.At), string(id), string(account))
		return err
	})
	return post.Target{Account: account, Slot: m.Slot.UTC(), Status: m.Status, Reason: m.Reason, UpdatedAt: m.At.UTC()}, err
}

// TestApprovalRaceOneSchedule is the acceptance on SQLite: 20 concurrent
// approvals of one post make one schedule; the same race against the
// write without its condition makes more, so the count can fail.
func TestApprovalRaceOneSchedule(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		store  func(*Store) publishingtest.ApprovalStore
		broken bool
	}{
		{"conditional write", func(s *Store) publishingtest.ApprovalStore { return s }, false},
		{"write without the condition", func(s *Store) publishingtest.ApprovalStore { return uncondApprovals{s} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, Options{})
			r, err := publishingtest.RaceApprovals(t.Context(), tc.store(s), "race", now, now.Add(time.Hour), "")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d approvals: %d schedules, %d approved, %d already approved, %d errors", publishingtest.ApprovalRacers, r.Schedules, r.Approved, r.Already, len(r.Errors))
			ok := r.Schedules == 1 && r.Approved == 1 && r.Already == publishingtest.ApprovalRacers-1 && len(r.Errors) == 0 && len(r.Other) == 0
			if ok == tc.broken {
				t.Errorf("schedules %d, approved %d, already %d, errors %v, other %v; broken implementation: %v", r.Schedules, r.Approved, r.Already, r.Errors, r.Other, tc.broken)
			}
		})
	}
}
