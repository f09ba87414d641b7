// Command confirm is the confirm workflow's Lambda function: one step of
// infra/statemachine/confirm.asl.json per invocation (look, confirm,
// release, hold, reject), its errors named as the state machine's Retry
// and Catch match them.
package main

import (
	"time"

	"oncepost/shared/awsruntime"
)

// lookTimeout bounds one look; the function's timeout must exceed it.
const lookTimeout = 30 * time.Second

func main() {
	awsruntime.Start("confirm", func(rt *awsruntime.Runtime) (any, error) {
		confirmer, err := rt.Confirmer(lookTimeout)
		if err != nil {
			return nil, err
		}
		return handler{steps: confirmer}.handle, nil
	})
}
