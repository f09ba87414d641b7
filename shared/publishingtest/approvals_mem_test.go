package publishingtest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

type approvalBugs struct {
	moveIgnoresStatus bool // the approval write without its condition on needs_approval
	moveNotAtomic     bool // checks the status, then writes outside the lock
	moveIgnoresRead   bool // no condition on the slot read
	awaitingAnyStatus bool
	awaitingInclusive bool // lists a slot equal to before
	policyNotStored   bool
}

// memApprovals is memPosts with the approval policy and MoveApproval.
type memApprovals struct {
	*memPosts
	bugs   approvalBugs
	pmu    sync.Mutex
	policy publishing.ApprovalPolicy
}

var _ ApprovalStore = (*memApprovals)(nil)

func newMemApprovals(b approvalBugs) *memApprovals {
	return &memApprovals{memPosts: newMemPosts(postsBugs{}), bugs: b}
}

func (m *memApprovals) ApprovalPolicy(context.Context) (publishing.ApprovalPolicy, error) {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	return m.policy, nil
}

func (m *memApprovals) PutApprovalPolicy(_ context.Context, p publishing.ApprovalPolicy) error {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	if !m.bugs.policyNotStored {
		m.policy = p
	}
	return nil
}

func (m *memApprovals) MoveApproval(_ context.Context, id post.ID, account post.AccountID, mv publishing.ApprovalMove) (post.Target, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.posts[id]
	if !ok {
		return post.Target{}, fmt.Errorf("post %s: %w", id, post.ErrNotFound)
	}
	i := slices.IndexFunc(p.Targets, func(t post.Target) bool { return t.Account == account })
	if i < 0 {
		return post.Target{}, fmt.Errorf("post %s has no target %s: %w", id, account, post.ErrNotFound)
	}
	cur := p.Targets[i]
	if cur.Status != post.NeedsApproval && !m.bugs.moveIgnoresStatus {
		return post.Target{}, fmt.Errorf("target is %s: %w", cur.Status, post.ErrConflict)
	}
	if !cur.Slot.Equal(mv.Read) && !m.bugs.moveIgnoresRead {
		return post.Target{}, fmt.Errorf("target moved: %w", post.ErrConflict)
	}
	if m.bugs.moveNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	next := post.Target{Account: account, Slot: mv.Slot.UTC(), Status: mv.Status, RemoteID: cur.RemoteID, Reason: mv.Reason, UpdatedAt: mv.At.UTC()}
	p = clonePost(m.posts[id])
	p.Targets[i] = next
	m.posts[id] = p
	return next, nil
}

func (m *memApprovals) AwaitingApproval(_ context.Context, before time.Time, limit int) ([]publishing.TargetRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []publishing.TargetRef
	for _, p := range m.posts {
		for _, tg := range p.Targets {
			in := before.IsZero() || tg.Slot.Before(before) || m.bugs.awaitingInclusive && tg.Slot.Equal(before)
			if (tg.Status == post.NeedsApproval || m.bugs.awaitingAnyStatus) && in {
				out = append(out, publishing.TargetRef{Post: p.ID, Account: tg.Account, Slot: tg.Slot})
			}
		}
	}
	slices.SortFunc(out, func(a, b publishing.TargetRef) int {
		return cmp.Or(a.Slot.Compare(b.Slot), cmp.Compare(a.Post, b.Post), cmp.Compare(a.Account, b.Account))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func TestApprovalsSuite(t *testing.T) {
	t.Run("correct adapter passes", func(t *testing.T) {
		TestApprovals(t, func(*testing.T) ApprovalStore { return newMemApprovals(approvalBugs{}) })
	})
	a := func(b approvalBugs) func() ApprovalStore { return func() ApprovalStore { return newMemApprovals(b) } }
	// The approval write without its condition on needs_approval is the
	// broken implementation the acceptance names: concurrent approvals
	// then all write, and each makes a schedule.
	testBroken(t, approvalChecks(), []brokenCase[ApprovalStore]{
		{"approves without the condition on needs_approval", a(approvalBugs{moveIgnoresStatus: true}),
			[]string{"MoveApproval/refused_unless_needs_approval", "MoveApproval/concurrent_exactly_one", "Desk/concurrent_approvals_one_schedule"}},
		{"checks the status outside the write", a(approvalBugs{moveNotAtomic: true}),
			[]string{"MoveApproval/concurrent_exactly_one", "Desk/concurrent_approvals_one_schedule"}},
		{"ignores the slot read", a(approvalBugs{moveIgnoresRead: true}),
			[]string{"MoveApproval/refused_when_moved_since_read"}},
		{"lists every status as awaiting approval", a(approvalBugs{awaitingAnyStatus: true}),
			[]string{"AwaitingApproval/by_slot_before_bound", "MoveApproval/approve_at_its_slot"}},
		{"lists a slot equal to before", a(approvalBugs{awaitingInclusive: true}),
			[]string{"AwaitingApproval/by_slot_before_bound"}},
		{"does not store the policy", a(approvalBugs{policyNotStored: true}),
			[]string{"Policy/round_trip"}},
	}, true)
}
