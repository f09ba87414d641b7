package awsruntime

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

// Start is a function's main: it reads the environment, builds the
// runtime (its lease owner named after the function and the instance's
// log stream), builds the handler with build, and hands it to
// lambda.Start. A missing or malformed setting ends the process with an
// error naming the function and the variable: Lambda reports it as an
// init failure.
func Start(function string, build func(rt *Runtime) (handler any, err error)) {
	env, err := ReadEnv(os.LookupEnv)
	if err != nil {
		log.Fatalf("%s: %v", function, err)
	}
	rt, err := New(context.Background(), env, function+"/"+os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME"))
	if err != nil {
		log.Fatalf("%s: %v", function, err)
	}
	h, err := build(rt)
	if err != nil {
		log.Fatalf("%s: %v", function, err)
	}
	lambda.Start(h)
}
