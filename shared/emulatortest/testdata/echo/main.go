// Command echo is a Lambda function for emulatortest's own tests: it
// answers each event with the event.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, event json.RawMessage) (json.RawMessage, error) {
		return event, nil
	})
}
