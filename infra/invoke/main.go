// Command invoke runs one Lambda function of template.yaml on this
// machine, as `sam local invoke` does in its container: it builds the
// function's bootstrap for this machine, starts dynalite and fauxqs on
// free ports of 127.0.0.1, creates the store's tables and the template's
// queues there, runs the bootstrap under the Lambda Runtime Interface
// Emulator with the environment the template gives the function (local
// endpoints, a static credential key instead of KMS, dummy AWS
// credentials), sends one event, prints the function's answer on stdout
// and its logs on stderr, and stops every process it started by PID.
//
//	go run ./infra/invoke -fn publisher -event events/publisher-batch.json
//
// `make invoke FN=… EVENT=…` runs it. Step Functions has no emulator here:
// AWS_ENDPOINT_URL_SFN (and AWS_ENDPOINT_URL, every other service) points
// at a port that refuses connections unless -sfn-endpoint names one, so a
// function never reaches AWS itself. The exit code is 0 when the function
// answered, whether with a result or an error; 1 when the invocation could
// not be made; 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "invoke:", err)
		stop()
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "invoke:", err)
		stop()
		os.Exit(1)
	}
}
