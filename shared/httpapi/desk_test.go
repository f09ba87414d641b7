package httpapi

// PENDING h-desk: testDesk stands in for publishing.Desk in this
// package's tests until it lands; then the tests build the real one on
// the same store and this file goes.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

type keyRecord struct {
	fp     string
	post   post.Post
	status int
	body   []byte
}

// testDesk is the Desk's contract on the real store: validation by
// post.Draft.Validate, posts in the store, keys beside it (one lock
// stands for the store's transaction that writes key and post together).
type testDesk struct {
	store *sqlitestore.Store
	mu    sync.Mutex
	keys  map[string]keyRecord
	// sizes is what the last Schedule was given.
	sizes map[string]int
}

func (d *testDesk) rules(ctx context.Context) (post.Rules, error) {
	accounts, err := d.store.ListAccounts(ctx)
	if err != nil {
		return post.Rules{}, err
	}
	r := post.Rules{Accounts: map[post.AccountID]post.Account{}, Now: time.Now(), Limits: func(name string) (post.Limits, bool) {
		k, ok := catalog.Lookup(name)
		return k.Limits(), ok
	}}
	for _, a := range accounts {
		r.Accounts[a.ID] = a
	}
	return r, nil
}

func (d *testDesk) Schedule(ctx context.Context, dr post.Draft, sizes map[string]int, req *KeyedRequest) (ScheduleResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sizes = sizes
	k := req.Scope + "\x00" + req.Key
	if rec, ok := d.keys[k]; ok {
		if rec.fp != req.Fingerprint {
			return ScheduleResult{}, ErrKeyReused
		}
		return ScheduleResult{Post: rec.post, Status: rec.status, Body: rec.body, Replayed: true}, nil
	}
	rules, err := d.rules(ctx)
	if err != nil {
		return ScheduleResult{}, err
	}
	p, err := dr.Validate(rules)
	if err != nil {
		return ScheduleResult{}, err
	}
	status, body, err := req.Encode(p)
	if err != nil {
		return ScheduleResult{}, err
	}
	if err := d.store.CreatePost(ctx, p); errors.Is(err, post.ErrConflict) {
		return ScheduleResult{}, fmt.Errorf("%w: %w", &post.FieldError{Field: "id", Problem: fmt.Sprintf("post %q exists already", p.ID), Fix: "pick another id"}, err)
	} else if err != nil {
		return ScheduleResult{}, err
	}
	d.keys[k] = keyRecord{fp: req.Fingerprint, post: p, status: status, body: body}
	return ScheduleResult{Post: p, Status: status, Body: body}, nil
}

func (d *testDesk) Show(ctx context.Context, id post.ID) (PostView, error) {
	p, err := d.store.GetPost(ctx, id)
	if err != nil {
		return PostView{}, err
	}
	v := PostView{Post: p}
	for _, t := range p.Targets {
		tv := TargetView{Target: t}
		key := ledger.PublishKey(string(t.Account), string(p.ID), t.Slot)
		if e, err := d.store.Get(ctx, key); err == nil {
			h, err := d.store.History(ctx, key)
			if err != nil {
				return PostView{}, err
			}
			tv.Ledger = append(tv.Ledger, EntryView{Entry: e, History: h})
		}
		v.Targets = append(v.Targets, tv)
	}
	return v, nil
}

func (d *testDesk) List(ctx context.Context, f publishing.PostFilter) (publishing.PostPage, error) {
	return d.store.ListPostPage(ctx, f)
}

func (d *testDesk) each(ctx context.Context, id post.ID, account post.AccountID, do func(t post.Target) TargetOutcome) ([]TargetOutcome, error) {
	p, err := d.store.GetPost(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []TargetOutcome
	for _, t := range p.Targets {
		if account == "" || t.Account == account {
			out = append(out, do(t))
		}
	}
	if out == nil {
		return nil, &post.FieldError{Field: "account", Problem: fmt.Sprintf("post %s has no target on %q", id, account), Fix: "name one of its accounts"}
	}
	return out, nil
}

func (d *testDesk) Cancel(ctx context.Context, id post.ID, account post.AccountID) ([]TargetOutcome, error) {
	return d.each(ctx, id, account, func(t post.Target) TargetOutcome {
		_, err := d.store.UpdateTarget(ctx, id, t.Account, post.TargetUpdate{Status: post.Cancelled, From: []post.TargetStatus{post.Scheduled, post.Cancelled}, At: time.Now()})
		if err != nil {
			return TargetOutcome{Account: t.Account, Message: "is " + string(t.Status)}
		}
		return TargetOutcome{Account: t.Account, Done: true, Message: "cancelled"}
	})
}

func (d *testDesk) Reschedule(ctx context.Context, id post.ID, account post.AccountID, at time.Time) ([]TargetOutcome, error) {
	if at.Before(time.Now()) {
		return nil, &post.FieldError{Field: "at", Problem: "is in the past", Fix: "pick a time from now on"}
	}
	return d.each(ctx, id, account, func(t post.Target) TargetOutcome {
		return TargetOutcome{Account: t.Account, Done: t.Status == post.Scheduled, Message: "rescheduled"}
	})
}

func (d *testDesk) RequestDelete(ctx context.Context, id post.ID, account post.AccountID, approve bool) ([]TargetOutcome, error) {
	return d.each(ctx, id, account, func(t post.Target) TargetOutcome {
		return TargetOutcome{Account: t.Account, Done: t.Status == post.Published, Message: "not published"}
	})
}

func (d *testDesk) posts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	pg, _ := d.store.ListPostPage(context.Background(), publishing.PostFilter{Limit: 10000})
	return len(pg.Posts)
}
