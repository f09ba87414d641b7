package sqsqueue

import (
	"sync"
	"testing"
	"time"

	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

// The port's conformance suite, unchanged, against fauxqs, once per way a
// message delivered too often reaches the dead-letter queue: moved by
// Receive (Options.MaxReceives, no RedrivePolicy) or by SQS itself (a
// RedrivePolicy, Options.MaxReceives 0). Each check gets a queue pair of
// its own; its sibling is another queue sharing the dead-letter queue,
// which must still never list, redrive or drop the first one's dead
// letters.
func TestQueueConformance(t *testing.T) {
	for _, mode := range []struct {
		name   string
		policy bool
	}{
		{"AdapterMovesDeadLetters", false},
		{"RedrivePolicyMovesDeadLetters", true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			var siblings sync.Map // *Queue → *Queue
			publishingtest.TestQueue(t, func(t *testing.T, maxReceives int) publishing.Queue {
				spec := pairSpec{}
				if mode.policy {
					spec.policy = maxReceives
				} else {
					spec.opts.MaxReceives = maxReceives
				}
				q := e.pair(t, spec)
				spec.deadURL = q.deadURL
				siblings.Store(q, e.pair(t, spec))
				return q
			}, publishingtest.QueueOptions{
				Unit: time.Second, // SQS's unit
				Sibling: func(q publishing.Queue) publishing.Queue {
					s, _ := siblings.Load(q.(*Queue))
					return s.(*Queue)
				},
			})
		})
	}
}
