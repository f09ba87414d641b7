package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/ebschedule"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
)

// skewedEndpoint is a reverse proxy to an AWS endpoint (an emulator or a
// fake) whose answers carry a Date header skew away from this machine's
// clock: AWS as an operator whose clock is wrong sees it. It records the
// JSON requests sent through it.
type skewedEndpoint struct {
	url string

	mu    sync.Mutex
	calls []skewedCall
}

// skewedCall is one request: its method, path, X-Amz-Target and body.
type skewedCall struct {
	method, path, target string
	body                 []byte
}

func newSkewedEndpoint(t *testing.T, upstream string, skew time.Duration) *skewedEndpoint {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	e := &skewedEndpoint{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(r *http.Response) error {
		r.Header.Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		e.mu.Lock()
		e.calls = append(e.calls, skewedCall{method: r.Method, path: r.URL.Path, target: r.Header.Get("X-Amz-Target"), body: body})
		e.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// delays are the DelaySeconds of the SendMessage calls made through the
// endpoint (SQS's JSON protocol; an absent DelaySeconds is 0).
func (e *skewedEndpoint) delays(t *testing.T) []int {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []int
	for _, c := range e.calls {
		if c.target != "AmazonSQS.SendMessage" {
			continue
		}
		var in struct{ DelaySeconds int }
		if err := json.Unmarshal(c.body, &in); err != nil {
			t.Fatalf("a SendMessage body is not JSON: %q: %v", c.body, err)
		}
		out = append(out, in.DelaySeconds)
	}
	return out
}

// wrote reports whether a request method path went through the endpoint.
func (e *skewedEndpoint) wrote(method, path string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.ContainsFunc(e.calls, func(c skewedCall) bool { return c.method == method && c.path == path })
}

// Whether a slot is too near for its schedule is decided by AWS's clock
// (the Date of the answers the CLI has had from the stack), not the
// operator's. A schedule fires at the minute before its slot and
// Scheduler needs it at least a minute ahead (ebschedule.MinLead); the
// slots below are picked so that the two clocks, three minutes apart,
// decide differently whatever the second the test runs at.
//
// AWS ahead (the laptop is slow): a slot 3-4 minutes away by the laptop is
// at most a minute away by AWS. A schedule written for it would fire late
// or never (its at() in AWS's past); it is queued at once instead, delayed
// to its slot by AWS's clock (not 3-4 minutes by the laptop's).
//
// AWS behind (the laptop is fast): a slot 30-90 s away by the laptop is
// 3.5-4.5 minutes away by AWS, time enough for its schedule: it gets one,
// and nothing is queued early.
//
// Both through post add and post reschedule.
func TestSlotTooNearIsDecidedByAWSClock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs emulators and a few processes")
	}
	st := newAWSStack(t)
	sb := sandbox.New(sandbox.Options{})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	acct := sb.AddAccount("news")
	st.ok(acct.AccessToken+"\n", "account", "add", "--id", "news", "--url", sb.URL(), "--token-file", "-")
	endpoint := func(service string) string {
		for _, kv := range st.env {
			if v, ok := strings.CutPrefix(kv, "AWS_ENDPOINT_URL_"+service+"="); ok {
				return v
			}
		}
		t.Fatalf("the stack has no %s endpoint", service)
		return ""
	}

	const skew = 3 * time.Minute
	tests := []struct {
		name string
		skew time.Duration // AWS's clock minus the laptop's
		// slot picks the slot from the laptop's clock.
		slot func(laptop time.Time) time.Time
		// queued: the target is triggered now, no schedule; else scheduled.
		queued bool
	}{
		{"AWS ahead", skew, func(l time.Time) time.Time {
			// fires at F in (l+90s, l+150s]: a minute or more away by
			// the laptop, already past or under a minute away by AWS
			return l.Add(150 * time.Second).Truncate(time.Minute).Add(90 * time.Second)
		}, true},
		{"AWS behind", -skew, func(l time.Time) time.Time {
			// fires at F in (l-30s, l+30s]: under a minute away by the
			// laptop, 2.5 minutes or more away by AWS
			return l.Add(30 * time.Second).Truncate(time.Minute).Add(time.Minute)
		}, false},
	}
	for _, tt := range tests {
		for _, op := range []string{"add", "reschedule"} {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				eps := map[string]*skewedEndpoint{}
				var env []string
				for _, service := range []string{"DYNAMODB", "SQS", "S3", "SFN", "SCHEDULER"} {
					eps[service] = newSkewedEndpoint(t, endpoint(service), tt.skew)
					env = append(env, "AWS_ENDPOINT_URL_"+service+"="+eps[service].url)
				}
				// Later values win in a child's environment.
				env = append(slices.Clone(st.env), env...)
				run := func(args ...string) {
					t.Helper()
					code, out, errOut := runChild(t, env, "", append(args, "--backend", "aws", "--outputs", st.outputsFile)...)
					if code != exitOK {
						t.Fatalf("oncepost %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
					}
				}
				id := post.ID(strings.ReplaceAll(strings.ToLower(tt.name), " ", "-") + "-" + op)
				if op == "reschedule" {
					far := time.Now().Add(2 * time.Hour).Truncate(time.Minute)
					run("post", "add", "--id", string(id), "--account", "news", "--at", far.Format(time.RFC3339), "--body", "Moved near: "+string(id)+".")
				}
				laptop := time.Now()
				slot := tt.slot(laptop).UTC()
				if op == "add" {
					run("post", "add", "--id", string(id), "--account", "news", "--at", slot.Format(time.RFC3339), "--body", "Near: "+string(id)+".")
				} else {
					run("post", "reschedule", string(id), "--at", slot.Format(time.RFC3339))
				}
				if took := time.Since(laptop); took > 25*time.Second {
					t.Fatalf("the command took %s: the slots' margins are 30 s, the test proves nothing", took)
				}

				target := st.target(id)
				scheduled := eps["SCHEDULER"].wrote(http.MethodPost, "/schedules/"+ebschedule.SlotName(slot))
				delays := eps["SQS"].delays(t)
				if tt.queued {
					if target.Status != post.Triggered || scheduled || len(delays) != 1 {
						t.Fatalf("slot %s, %s from the laptop's clock and %s from AWS's: target %s, schedule written %t, %d jobs sent; want it triggered now, no schedule, one job",
							slot.Format(time.RFC3339), slot.Sub(laptop).Round(time.Second), slot.Sub(laptop.Add(tt.skew)).Round(time.Second), target.Status, scheduled, len(delays))
					}
					// Delayed to the slot by AWS's clock: at most a minute.
					if delays[0] > 61 {
						t.Errorf("the job is delayed %d s, want the time to its slot by AWS's clock (at most 60 s), not by the laptop's", delays[0])
					}
					return
				}
				if target.Status != post.Scheduled || !scheduled || len(delays) != 0 {
					t.Fatalf("slot %s, %s from the laptop's clock and %s from AWS's: target %s, schedule written %t, %d jobs sent (delays %v); want a schedule and nothing queued",
						slot.Format(time.RFC3339), slot.Sub(laptop).Round(time.Second), slot.Sub(laptop.Add(tt.skew)).Round(time.Second), target.Status, scheduled, len(delays), delays)
				}
			})
		}
	}
}
