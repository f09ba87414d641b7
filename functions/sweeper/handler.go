package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"oncepost/shared/publishing"
)

// sweeper runs one sweep (publishing.Sweeper).
type sweeper interface {
	Sweep(ctx context.Context) (publishing.SweepReport, error)
}

// handler serves the sweeper's schedule.
type handler struct {
	sweeper sweeper
	log     *slog.Logger
}

// handle runs one sweep whatever the event (the schedule's input is not
// read: every sweep is the same). It returns the report; a sweep that
// could not read the store fails the invocation, so the function's Errors
// alarm fires as well as the gauges' (which are not emitted then). Repairs
// that failed are in the report and the SweepErrors metric, and the next
// sweep tries again.
func (h handler) handle(ctx context.Context, _ json.RawMessage) (publishing.SweepReport, error) {
	rep, err := h.sweeper.Sweep(ctx)
	if err != nil {
		h.log.ErrorContext(ctx, "sweep", "err", err, "read_failed", rep.ReadFailed)
	}
	if rep.ReadFailed {
		return rep, fmt.Errorf("sweep could not read the store: %w", err)
	}
	return rep, nil
}
