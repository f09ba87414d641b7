package awsruntime

import (
	"time"

	"oncepost/shared/publishing"
)

// Recurring is the recurring rules' use cases on the stack
// (publishing.Recurring): rules in the workspace table, occurrences
// scheduled through Desk (the post, then its slot's schedule), as the
// API's and the CLI's.
func (rt *Runtime) Recurring(callTimeout time.Duration) (*publishing.Recurring, error) {
	desk, err := rt.Desk(callTimeout)
	if err != nil {
		return nil, err
	}
	return &publishing.Recurring{Rules: rt.Store, Desk: desk, Logger: rt.Logger}, nil
}
