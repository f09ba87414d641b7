package publishingtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// queueSlotsBugs are the mistakes TestQueueSlots must catch.
type queueSlotsBugs struct {
	claimNotAtomic   bool // reads the slot, then writes it, outside one write
	claimOverwrites  bool // a claim replaces whoever holds the slot
	releaseAnyHolder bool // a release frees the slot whoever holds it
}

// memQueueSlots keeps claims in memory.
type memQueueSlots struct {
	bugs   queueSlotsBugs
	mu     sync.Mutex
	claims map[post.AccountID]map[time.Time]publishing.SlotClaim
}

func (m *memQueueSlots) ClaimQueueSlot(_ context.Context, account post.AccountID, slot time.Time, owner, prev post.ID, at time.Time) error {
	m.mu.Lock()
	held, ok := m.claims[account][slot.UTC()]
	if m.bugs.claimNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if !m.bugs.claimOverwrites && (prev == "" && ok || prev != "" && (!ok || held.Post != prev)) {
		return fmt.Errorf("slot %s: %w", slot, post.ErrConflict)
	}
	if m.claims[account] == nil {
		m.claims[account] = map[time.Time]publishing.SlotClaim{}
	}
	m.claims[account][slot.UTC()] = publishing.SlotClaim{Slot: slot.UTC(), Post: owner, At: at.UTC()}
	return nil
}

func (m *memQueueSlots) ReleaseQueueSlot(_ context.Context, account post.AccountID, slot time.Time, owner post.ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.claims[account][slot.UTC()]; ok && (c.Post == owner || m.bugs.releaseAnyHolder) {
		delete(m.claims[account], slot.UTC())
	}
	return nil
}

func (m *memQueueSlots) QueueSlotClaims(_ context.Context, account post.AccountID, from time.Time, limit int) ([]publishing.SlotClaim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []publishing.SlotClaim
	for _, c := range m.claims[account] {
		if !c.Slot.Before(from) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b publishing.SlotClaim) int { return a.Slot.Compare(b.Slot) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// memQueueStore is a whole QueueStore in memory.
func newMemQueueStore(b queueSlotsBugs) QueueStore {
	posts := newMemPosts(postsBugs{})
	return QueueStore{
		Slots:     &memQueueSlots{bugs: b, claims: map[post.AccountID]map[time.Time]publishing.SlotClaim{}},
		Posts:     posts,
		Accounts:  newMemAccounts(accountsBugs{}),
		Scheduler: memScheduler{posts},
	}
}

// memScheduler creates posts without schedules.
type memScheduler struct{ posts *memPosts }

func (s memScheduler) CreatePost(ctx context.Context, p post.Post, _ *publishing.IdempotencyRecord) error {
	return s.posts.CreatePost(ctx, p)
}

func (s memScheduler) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	return s.posts.reschedule(id, account, slot)
}

func (memScheduler) Cancelled(context.Context, publishing.TargetRef) {}

func TestQueueSlotsMem(t *testing.T) {
	TestQueueSlots(t, func(*testing.T) QueueStore { return newMemQueueStore(queueSlotsBugs{}) })
}

func TestQueueSlotsSuiteCatchesBrokenAdapters(t *testing.T) {
	q := func(b queueSlotsBugs) func() QueueStore { return func() QueueStore { return newMemQueueStore(b) } }
	testBroken(t, queueSlotsChecks(), []brokenCase[QueueStore]{
		{"claims outside one write", q(queueSlotsBugs{claimNotAtomic: true}),
			[]string{"ClaimQueueSlot/concurrent", "Desk/100_concurrent_adds_distinct_slots"}},
		{"a claim overwrites the holder", q(queueSlotsBugs{claimOverwrites: true}),
			[]string{"ClaimQueueSlot/once", "ClaimQueueSlot/passes_only_from_its_holder", "ClaimQueueSlot/concurrent", "Desk/100_concurrent_adds_distinct_slots"}},
		{"a release frees another's claim", q(queueSlotsBugs{releaseAnyHolder: true}),
			[]string{"ReleaseQueueSlot/only_its_holder"}},
	}, true)
}

// reschedule moves a scheduled target to slot (the scheduler's Reschedule
// without schedules).
func (m *memPosts) reschedule(id post.ID, account post.AccountID, slot time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.posts[id]
	if !ok {
		return fmt.Errorf("post %s: %w", id, post.ErrNotFound)
	}
	p = clonePost(p)
	for i, tg := range p.Targets {
		if tg.Account == account {
			if tg.Status != post.Scheduled {
				return fmt.Errorf("target is %s: %w", tg.Status, post.ErrConflict)
			}
			p.Targets[i].Slot = slot.UTC()
			m.posts[id] = p
			return nil
		}
	}
	return fmt.Errorf("post %s has no target on %s: %w", id, account, post.ErrNotFound)
}
