// Command sweeper is the sweeper Lambda function, run every minute by an
// EventBridge Scheduler rate(1 minute) schedule: it counts what is not
// progressing (EMF gauges the alarms watch) and repairs it by
// re-enqueueing jobs or starting confirm workflows, never by sending.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"oncepost/shared/awsruntime"
)

// callTimeout bounds one platform read (a stale delete's read-back).
const callTimeout = 10 * time.Second

func main() {
	ctx := context.Background()
	env, err := awsruntime.ReadEnv(os.LookupEnv)
	if err != nil {
		log.Fatalf("sweeper: %v", err)
	}
	rt, err := awsruntime.New(ctx, env, "sweeper/"+os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"))
	if err != nil {
		log.Fatalf("sweeper: %v", err)
	}
	sw, err := rt.Sweeper(callTimeout)
	if err != nil {
		log.Fatalf("sweeper: %v", err)
	}
	lambda.Start(handler{sweeper: sw, log: rt.Logger}.handle)
}
