package sqlitestore

import (
	"testing"

	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

func TestRecurringRulesConformance(t *testing.T) {
	publishingtest.TestRecurringRules(t, func(t *testing.T) publishing.RecurringRules { return openTest(t, Options{}) })
}
