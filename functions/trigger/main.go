// Command trigger is the trigger Lambda function: EventBridge Scheduler
// invokes it when a slot's schedule fires (a minute before the slot), and
// it enqueues the job of every target due at that slot, each delayed
// until its slot; a per-target schedule's input enqueues that one target.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"oncepost/shared/awsruntime"
)

func main() {
	ctx := context.Background()
	env, err := awsruntime.ReadEnv(os.LookupEnv)
	if err != nil {
		log.Fatalf("trigger: %v", err)
	}
	rt, err := awsruntime.New(ctx, env, "trigger/"+os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"))
	if err != nil {
		log.Fatalf("trigger: %v", err)
	}
	tr, err := rt.Trigger()
	if err != nil {
		log.Fatalf("trigger: %v", err)
	}
	lambda.Start(handler{trigger: tr, log: rt.Logger}.handle)
}
