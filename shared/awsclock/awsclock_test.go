package awsclock_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"oncepost/shared/awsclock"
	"oncepost/shared/emulatortest"
)

// answer is how the fake AWS endpoint answers one call.
type answer struct {
	date   time.Duration // the Date header's offset from this machine's clock
	noDate bool          // no Date header at all
	age    bool          // an Age header: a cached answer
	status int           // 0 is 200
}

// fakeDynamoDB answers ListTables with the answers in turn (the last one
// again once they run out).
func fakeDynamoDB(t *testing.T, answers []answer) string {
	t.Helper()
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[min(n, len(answers)-1)]
		n++
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/x-amz-json-1.0")
		if a.noDate {
			h["Date"] = nil // net/http adds none then
		} else {
			h.Set("Date", time.Now().Add(a.date).UTC().Format(http.TimeFormat))
		}
		if a.age {
			h.Set("Age", "30")
		}
		if a.status != 0 {
			w.WriteHeader(a.status)
			io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"no"}`)
			return
		}
		io.WriteString(w, `{"TableNames":[]}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The clock takes the skew of the last answer measured: the Date header
// against the moment the answer arrived, whether the call succeeded or
// not. An answer without a Date, or a cached one (Age), is not measured
// and leaves the clock as it was; before any measurement it is the local
// clock.
func TestClockIsAWSTimeAsLastAnswered(t *testing.T) {
	const skew = 3 * time.Minute
	tests := []struct {
		name     string
		answers  []answer
		want     time.Duration // AWS's clock minus the local one
		measured bool
	}{
		{"AWS ahead", []answer{{date: skew}}, skew, true},
		{"AWS behind", []answer{{date: -skew}}, -skew, true},
		{"in step", []answer{{}}, 0, true},
		{"an error answer is measured too", []answer{{date: skew, status: http.StatusBadRequest}}, skew, true},
		{"the latest answer counts", []answer{{date: skew}, {date: -skew}}, -skew, true},
		{"no Date: the local clock", []answer{{noDate: true}}, 0, false},
		{"no Date after a measured answer: that answer's skew", []answer{{date: skew}, {noDate: true}}, skew, true},
		{"a cached answer is not measured", []answer{{date: skew}, {date: -skew, age: true}}, skew, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clock awsclock.Clock
			if got := clock.Now(); got.Sub(time.Now()).Abs() > time.Second {
				t.Fatalf("an unmeasured clock reads %s, want the local time", got)
			}
			cfg := emulatortest.Config(fakeDynamoDB(t, tt.answers))
			cfg.RetryMaxAttempts = 1
			cfg.APIOptions = append(cfg.APIOptions, clock.APIOptions()...)
			client := dynamodb.NewFromConfig(cfg)
			for range tt.answers {
				client.ListTables(t.Context(), &dynamodb.ListTablesInput{}) // an error answer is one of the cases
			}
			// Date is whole seconds: the measured skew is up to a
			// second short, plus the time on the wire.
			skew, measured := clock.Skew()
			if measured != tt.measured || (skew-tt.want).Abs() > 2*time.Second {
				t.Errorf("Skew() = %s, %t; want about %s, %t", skew, measured, tt.want, tt.measured)
			}
			if off := clock.Now().Sub(time.Now().Add(tt.want)); off.Abs() > 2*time.Second {
				t.Errorf("Now() is %s off AWS's time", off)
			}
		})
	}
}
