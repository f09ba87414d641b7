package dynamostore

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

func TestApprovalsConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, PostsTable, WorkspaceTable)
	publishingtest.TestApprovals(t, func(t *testing.T) publishingtest.ApprovalStore {
		prefix := next(t)
		return &approvalsPair{postsPair{pair{a: e.store(t, prefix, nil, Options{}), b: e.store(t, prefix, nil, Options{})}}}
	})
}

type approvalsPair struct{ postsPair }

func (p *approvalsPair) ApprovalPolicy(ctx context.Context) (publishing.ApprovalPolicy, error) {
	return p.pick().ApprovalPolicy(ctx)
}
func (p *approvalsPair) PutApprovalPolicy(ctx context.Context, ap publishing.ApprovalPolicy) error {
	return p.pick().PutApprovalPolicy(ctx, ap)
}
func (p *approvalsPair) MoveApproval(ctx context.Context, id post.ID, account post.AccountID, m publishing.ApprovalMove) (post.Target, error) {
	return p.pick().MoveApproval(ctx, id, account, m)
}
func (p *approvalsPair) AwaitingApproval(ctx context.Context, before time.Time, limit int) ([]publishing.TargetRef, error) {
	return p.pick().AwaitingApproval(ctx, before, limit)
}

// uncondApprovals is the store with the approval's UpdateItem stripped of
// its condition: the broken implementation the approval race must catch.
type uncondApprovals struct{ *approvalsPair }

func (u uncondApprovals) MoveApproval(ctx context.Context, id post.ID, account post.AccountID, m publishing.ApprovalMove) (post.Target, error) {
	s := u.pick()
	next := post.Target{Account: account, Slot: m.Slot.UTC(), Status: m.Status, Reason: m.Reason, UpdatedAt: m.At.UTC()}
	var x expr
	var up update
	up.set(&x, attrStatus, str(string(next.Status)))
	up.set(&x, attrSlot, str(encTime(next.Slot)))
	up.set(&x, attrSt, str(statusShard(id, account, next.Status)))
	up.set(&x, attrStAt, str(stAt(id, next)))
	expression := up.String()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.tables.posts, Key: targetKey(id, account),
		UpdateExpression: &expression, ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values})
	return next, err
}

// TestApprovalRaceOneSchedule is the acceptance on dynalite: 20
// concurrent approvals of one post, through two clients, make one
// schedule; the same race against the UpdateItem without its condition
// makes more, so the count can fail.
func TestApprovalRaceOneSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, PostsTable, WorkspaceTable)
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		broken bool
	}{
		{"conditional write", false},
		{"write without the condition", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := next(t)
			p := &approvalsPair{postsPair{pair{a: e.store(t, prefix, nil, Options{}), b: e.store(t, prefix, nil, Options{})}}}
			var s publishingtest.ApprovalStore = p
			if tc.broken {
				s = uncondApprovals{p}
			}
			r, err := publishingtest.RaceApprovals(t.Context(), s, "race", now, now.Add(time.Hour), "")
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
