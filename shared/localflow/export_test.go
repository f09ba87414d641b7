package localflow

// Queries whose plans plan_test.go checks.
const (
	SQLClaimOwners   = sqlClaimOwners
	SQLTakeOver      = sqlTakeOver
	SQLDueNames      = sqlDueNames
	SQLNextDue       = sqlNextDue
	SQLStopped       = sqlStopped
	SQLDeleteHistory = sqlDeleteHistory
	SQLDeleteStopped = sqlDeleteStopped
	SQLPruneMachines = sqlPruneMachines
)

// PruneBatch is how many executions one Prune transaction deletes.
const PruneBatch = pruneBatch
