package dynamostore

import (
	"context"
	"testing"

	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
	"oncepost/shared/recurring"
)

func TestRecurringRulesConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, WorkspaceTable)
	publishingtest.TestRecurringRules(t, func(t *testing.T) publishing.RecurringRules {
		prefix := next(t)
		return &rulesPair{pair{a: e.store(t, prefix, nil, Options{}), b: e.store(t, prefix, nil, Options{})}}
	})
}

// rulesPair is the rules of two Stores on one table, used in turn.
type rulesPair struct{ pair }

func (p *rulesPair) CreateRule(ctx context.Context, r recurring.Rule) error {
	return p.pick().CreateRule(ctx, r)
}
func (p *rulesPair) GetRule(ctx context.Context, id recurring.ID) (recurring.Rule, error) {
	return p.pick().GetRule(ctx, id)
}
func (p *rulesPair) UpdateRule(ctx context.Context, r recurring.Rule) error {
	return p.pick().UpdateRule(ctx, r)
}
func (p *rulesPair) ListRules(ctx context.Context) ([]recurring.Rule, error) {
	return p.pick().ListRules(ctx)
}
