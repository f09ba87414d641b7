// Command confirm is the confirm workflow's Lambda function: one step of
// infra/statemachine/confirm.asl.json per invocation (look, confirm,
// release, hold, reject), its errors named as the state machine's Retry
// and Catch match them.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"oncepost/shared/awsruntime"
)

// lookTimeout bounds one look; the function's timeout must exceed it.
const lookTimeout = 30 * time.Second

func main() {
	ctx := context.Background()
	env, err := awsruntime.ReadEnv(os.LookupEnv)
	if err != nil {
		log.Fatalf("confirm: %v", err)
	}
	rt, err := awsruntime.New(ctx, env, "confirm/"+os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"))
	if err != nil {
		log.Fatalf("confirm: %v", err)
	}
	confirmer, err := rt.Confirmer(lookTimeout)
	if err != nil {
		log.Fatalf("confirm: %v", err)
	}
	lambda.Start(handler{steps: confirmer}.handle)
}
