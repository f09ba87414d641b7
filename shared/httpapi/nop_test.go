package httpapi

import (
	"context"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// nopStore and nopDecider fill ports a test does not call.
type nopStore struct{}

func (nopStore) Held(context.Context, int) ([]ledger.Entry, error)            { return nil, nil }
func (nopStore) Open(context.Context, time.Time, int) ([]ledger.Entry, error) { return nil, nil }
func (nopStore) ListAccounts(context.Context) ([]post.Account, error)         { return nil, nil }
func (nopStore) Depth(context.Context) (publishing.QueueDepth, error) {
	return publishing.QueueDepth{}, nil
}
func (nopStore) DeadLetters(context.Context, int) ([]publishing.DeadLetter, error) { return nil, nil }
func (nopStore) Redrive(context.Context, string) error                             { return nil }
func (nopStore) Drop(context.Context, string) error                                { return nil }
func (nopStore) CountTargets(context.Context, ...post.TargetStatus) (map[post.TargetStatus]int, error) {
	return nil, nil
}

type nopDecider struct{}

func (nopDecider) Decide(context.Context, ledger.Key, publishing.Decision) (publishing.DecideResult, error) {
	return publishing.DecideResult{}, nil
}
