package slotcontinue

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"oncepost/shared/ebschedule"
)

// The continuation is an asynchronous Invoke of the named function whose
// payload the trigger decodes as the slot's firing; an answer other than
// 202 Accepted is an error.
func TestContinueSlotInvokesTheFunctionAsynchronously(t *testing.T) {
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		status int
		ok     bool
	}{
		{"accepted", http.StatusAccepted, true},
		{"throttled", http.StatusTooManyRequests, false},
		{"a synchronous answer", http.StatusOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				path, invocation string
				in               ebschedule.Input
				err              error
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got.path, got.invocation = r.URL.Path, r.Header.Get("X-Amz-Invocation-Type")
				got.in, got.err = ebschedule.DecodeInput(body)
				w.Header().Set("Content-Type", "application/json")
				if tc.status == http.StatusTooManyRequests {
					w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
					w.WriteHeader(tc.status)
					io.WriteString(w, `{"Type":"User","message":"Rate exceeded"}`)
					return
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			client := lambda.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
				Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
			c, err := New(client, "stack-trigger")
			if err != nil {
				t.Fatal(err)
			}
			err = c.ContinueSlot(t.Context(), slot)
			if (err == nil) != tc.ok {
				t.Errorf("ContinueSlot = %v, want ok=%v", err, tc.ok)
			}
			if got.path != "/2015-03-31/functions/stack-trigger/invocations" || got.invocation != "Event" {
				t.Errorf("invoked %s as %q, want the function's invocations, Event", got.path, got.invocation)
			}
			if got.err != nil || !got.in.AllDue() || !got.in.Slot.Equal(slot) {
				t.Errorf("payload decoded as %+v (%v), want the slot's firing", got.in, got.err)
			}
		})
	}
	if _, err := New(nil, "f"); err == nil {
		t.Error("New without a client succeeded")
	}
}
