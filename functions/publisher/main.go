// Command publisher is the publisher Lambda function: the SQS event
// source mapping hands it up to ten jobs, and it publishes each at most
// once (the ledger), settling every message on its own and reporting the
// ones to come back in batchItemFailures.
package main

import (
	"time"

	"oncepost/shared/awsruntime"
)

// callTimeout bounds one platform call.
const callTimeout = 10 * time.Second

func main() {
	awsruntime.Start("publisher", func(rt *awsruntime.Runtime) (any, error) {
		q, err := rt.Queue()
		if err != nil {
			return nil, err
		}
		pub, err := rt.Publisher(callTimeout)
		if err != nil {
			return nil, err
		}
		return handler{batches: q, publisher: pub, log: rt.Logger, need: 3 * callTimeout, maxReceives: rt.Env.MaxReceives}.handle, nil
	})
}
