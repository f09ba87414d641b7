// Command publisher is the publisher Lambda function: the SQS event
// source mapping hands it up to ten jobs, and it publishes each at most
// once (the ledger), settling every message on its own and reporting the
// ones to come back in batchItemFailures.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"oncepost/shared/awsruntime"
)

// callTimeout bounds one platform call.
const callTimeout = 10 * time.Second

func main() {
	ctx := context.Background()
	env, err := awsruntime.ReadEnv(os.LookupEnv)
	if err != nil {
		log.Fatalf("publisher: %v", err)
	}
	rt, err := awsruntime.New(ctx, env, "publisher/"+os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"))
	if err != nil {
		log.Fatalf("publisher: %v", err)
	}
	q, err := rt.Queue()
	if err != nil {
		log.Fatalf("publisher: %v", err)
	}
	pub, err := rt.Publisher(callTimeout)
	if err != nil {
		log.Fatalf("publisher: %v", err)
	}
	lambda.Start(handler{batches: q, publisher: pub, log: rt.Logger, need: 3 * callTimeout}.handle)
}
