package localflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/localflow"
	"oncepost/shared/publishing"
)

const confirmFn = "arn:aws:lambda:us-east-1:123456789012:function:oncepost-confirm"

// loadConfirm loads infra/statemachine/confirm.asl.json, the file Step
// Functions runs.
func loadConfirm(t *testing.T) *localflow.Machine {
	t.Helper()
	def, err := os.ReadFile(filepath.Join("..", "..", "infra", "statemachine", "confirm.asl.json"))
	if err != nil {
		t.Fatalf("read the confirm definition: %v", err)
	}
	m, err := localflow.Load(def, map[string]string{"ConfirmFunctionArn": confirmFn})
	if err != nil {
		t.Fatalf("Load confirm.asl.json: %v", err)
	}
	return m
}

// look is one scripted answer of the look action.
type look struct {
	found, resolved bool
	remoteID        string
	err             error
}

// confirmFunction plays the confirm Lambda: looks answer from a script
// (the last answer repeats), other actions answer {"state": …}.
func confirmFunction(looks []look) func(context.Context, call, int) (any, error) {
	var n int
	return func(_ context.Context, c call, _ int) (any, error) {
		switch c.Payload["action"] {
		case "look":
			l := looks[min(n, len(looks)-1)]
			n++
			if l.err != nil {
				return nil, l.err
			}
			reply := map[string]any{"found": l.found, "resolved": l.resolved, "state": "unknown"}
			if l.remoteID != "" {
				reply["remote_id"] = l.remoteID
			}
			return reply, nil
		case "confirm":
			return map[string]any{"state": "confirmed"}, nil
		case "release":
			return map[string]any{"state": "released"}, nil
		case "reject":
			return map[string]any{"state": "failed"}, nil
		case "hold":
			return map[string]any{"state": "held"}, nil
		}
		return nil, fmt.Errorf("unknown action %v", c.Payload["action"])
	}
}

var notFound = look{}

// stepErr is the confirm step's own error type, named for the workflow.
func stepErr(name string) error {
	return &publishing.StepError{Name: name, Err: errors.New("scripted")}
}

func TestConfirmWorkflow(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		max      int
		looks    []look
		decision string // the operator's answer when the execution parks on a token
		// want: actions in order, and when each was called (seconds after start)
		wantActions []string
		wantAt      []int
		wantStatus  string
		wantError   string
		wantLast    string
		check       func(t *testing.T, calls []call)
	}{
		{
			name: "found at the first look", policy: "auto", max: 3,
			looks:       []look{{found: true, remoteID: "r1"}},
			wantActions: []string{"look", "confirm"}, wantAt: []int{20, 20},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
			check: func(t *testing.T, calls []call) {
				if calls[1].Payload["remote_id"] != "r1" {
					t.Errorf("confirm payload %v, want remote_id r1", calls[1].Payload)
				}
			},
		},
		{
			name: "found at the third look", policy: "auto", max: 3,
			looks:       []look{notFound, notFound, {found: true, remoteID: "r3"}},
			wantActions: []string{"look", "look", "look", "confirm"}, wantAt: []int{20, 40, 60, 60},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "never found, auto", policy: "auto", max: 3,
			looks:       []look{notFound},
			wantActions: []string{"look", "look", "look", "release"}, wantAt: []int{20, 40, 60, 60},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "one check, auto", policy: "auto", max: 1,
			looks:       []look{notFound},
			wantActions: []string{"look", "release"}, wantAt: []int{20, 20},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "never found, manual, released by the operator", policy: "manual", max: 3,
			looks: []look{notFound}, decision: `{"decision": "release"}`,
			wantActions: []string{"look", "look", "look", "hold", "release"}, wantAt: []int{20, 40, 60, 60, 60},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
			check: func(t *testing.T, calls []call) {
				hold := calls[3].Payload
				if hold["reason"] != "not found after 3 looks" || hold["token"] == "" || hold["key"] != "k-1" || hold["attempt"] != 2.0 {
					t.Errorf("hold payload = %v", hold)
				}
			},
		},
		{
			name: "manual, confirmed by the operator", policy: "manual", max: 2,
			looks: []look{notFound}, decision: `{"decision": "confirm", "remote_id": "op-7"}`,
			wantActions: []string{"look", "look", "hold", "confirm"}, wantAt: []int{20, 40, 40, 40},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
			check: func(t *testing.T, calls []call) {
				if calls[3].Payload["remote_id"] != "op-7" {
					t.Errorf("confirm payload %v, want remote_id op-7", calls[3].Payload)
				}
			},
		},
		{
			name: "manual, rejected by the operator", policy: "manual", max: 1,
			looks: []look{notFound}, decision: `{"decision": "reject"}`,
			wantActions: []string{"look", "hold", "reject"}, wantAt: []int{20, 20, 20},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "manual, already resolved when held", policy: "manual", max: 1,
			looks: []look{notFound}, decision: `{"decision": "resolved"}`,
			wantActions: []string{"look", "hold"}, wantAt: []int{20, 20},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "operator confirms without a remote id", policy: "manual", max: 1,
			looks: []look{notFound}, decision: `{"decision": "confirm"}`,
			wantActions: []string{"look", "hold"}, wantAt: []int{20, 20},
			wantStatus: localflow.StatusFailed, wantError: "InvalidDecision", wantLast: "BadDecision",
		},
		{
			name: "operator answers nonsense", policy: "manual", max: 1,
			looks: []look{notFound}, decision: `"yes"`,
			wantActions: []string{"look", "hold"}, wantAt: []int{20, 20},
			wantStatus: localflow.StatusFailed, wantError: "InvalidDecision", wantLast: "BadDecision",
		},
		{
			name: "unreadable goes to an operator without looking", policy: "unreadable", max: 3,
			decision:    `{"decision": "release"}`,
			wantActions: []string{"hold", "release"}, wantAt: []int{0, 0},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
			check: func(t *testing.T, calls []call) {
				if calls[0].Payload["reason"] != "the platform cannot be read back; an operator decides" {
					t.Errorf("hold payload = %v", calls[0].Payload)
				}
			},
		},
		{
			name: "resolved meanwhile", policy: "auto", max: 3,
			looks:       []look{{resolved: true, found: true, remoteID: "late"}},
			wantActions: []string{"look"}, wantAt: []int{20},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "a transient look error is retried", policy: "auto", max: 3,
			looks:       []look{{err: stepErr(publishing.ErrNamePlatformUnavailable)}, {err: stepErr(publishing.ErrNamePlatformUnavailable)}, {found: true, remoteID: "r"}},
			wantActions: []string{"look", "look", "look", "confirm"}, wantAt: []int{20, 25, 35, 35},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "an unreachable store is retried", policy: "auto", max: 3,
			looks:       []look{{err: stepErr(publishing.ErrNameStoreUnavailable)}, {found: true, remoteID: "r"}},
			wantActions: []string{"look", "look", "confirm"}, wantAt: []int{20, 25, 25},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "the platform stays down", policy: "auto", max: 3,
			looks:       []look{{err: stepErr(publishing.ErrNamePlatformUnavailable)}},
			decision:    `{"decision": "reject"}`,
			wantActions: []string{"look", "look", "look", "look", "look", "look", "hold", "reject"}, wantAt: []int{20, 25, 35, 55, 95, 155, 155, 155},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
			check: func(t *testing.T, calls []call) {
				if r := calls[6].Payload["reason"]; r != `could not read the platform back: {"errorMessage":"PlatformUnavailable: scripted","errorType":"PlatformUnavailable"}` {
					t.Errorf("hold reason %q", r)
				}
			},
		},
		{
			name: "a lost invocation is retried", policy: "auto", max: 3,
			looks:       []look{{err: &localflow.TransportError{Err: errors.New("reset")}}, {found: true, remoteID: "r"}},
			wantActions: []string{"look", "look", "confirm"}, wantAt: []int{20, 22, 22},
			wantStatus: localflow.StatusSucceeded, wantLast: "Done",
		},
		{
			name: "a permanent error fails through Catch", policy: "auto", max: 3,
			looks:       []look{{err: stepErr(publishing.ErrNameInvalidStep)}},
			wantActions: []string{"look"}, wantAt: []int{20},
			wantStatus: localflow.StatusFailed, wantError: "ConfirmStepFailed", wantLast: "Failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessFor(t, loadConfirm(t))
			h.inv.reply = confirmFunction(tt.looks)
			in, err := json.Marshal(publishing.ConfirmInput{Key: "k-1", Attempt: 2, Policy: tt.policy, FirstWaitSeconds: 20, WaitSeconds: 20, MaxChecks: tt.max})
			if err != nil {
				t.Fatal(err)
			}
			h.start("k-1-2", string(in))
			ex := driveConfirm(t, h, "k-1-2", tt.decision)

			calls := h.inv.Calls()
			var actions []string
			var at []int
			for _, c := range calls {
				if c.Function != confirmFn {
					t.Errorf("called %q, want %q", c.Function, confirmFn)
				}
				if c.Payload["key"] != "k-1" || c.Payload["attempt"] != 2.0 {
					t.Errorf("payload %v does not carry key k-1 attempt 2", c.Payload)
				}
				actions = append(actions, c.Payload["action"].(string))
				at = append(at, int(c.At.Sub(t0)/time.Second))
			}
			if diff := cmp.Diff(tt.wantActions, actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAt, at); diff != "" {
				t.Errorf("seconds after start of each action (-want +got):\n%s", diff)
			}
			if ex.Status != tt.wantStatus || ex.Error != tt.wantError || ex.History[len(ex.History)-1] != tt.wantLast {
				t.Errorf("got %s %s %q ending in %v; want %s %s ending in %s", ex.Status, ex.Error, ex.Cause, ex.History, tt.wantStatus, tt.wantError, tt.wantLast)
			}
			if tt.check != nil && len(calls) == len(tt.wantActions) {
				tt.check(t, calls)
			}
		})
	}
}

// driveConfirm runs the execution on the fake clock, one second at a
// time, answering a parked task token with decision, until it stops (at
// most 10 minutes).
func driveConfirm(t *testing.T, h *harness, name, decision string) localflow.Execution {
	t.Helper()
	for range 600 {
		h.runDue()
		ex := h.describe(name)
		if ex.Status != localflow.StatusRunning {
			return ex
		}
		if ex.TaskToken != "" && ex.DueAt.IsZero() {
			if decision == "" {
				t.Fatalf("parked on a task token without a decision to give")
			}
			if err := h.e.SendTaskSuccess(context.Background(), ex.TaskToken, json.RawMessage(decision)); err != nil {
				t.Fatalf("SendTaskSuccess: %v", err)
			}
			decision = ""
			continue
		}
		h.clock.Advance(time.Second)
	}
	t.Fatalf("execution %s still running after 10 minutes", name)
	return localflow.Execution{}
}

func TestConfirmHoldParks(t *testing.T) {
	// Manual policy, never found: after the looks, the execution waits on
	// the hold's token, whatever the time, until the operator answers.
	h := newHarnessFor(t, loadConfirm(t))
	h.inv.reply = confirmFunction([]look{notFound})
	in, _ := json.Marshal(publishing.ConfirmInput{Key: "k-9", Attempt: 1, Policy: publishing.PolicyManual, FirstWaitSeconds: 20, WaitSeconds: 20, MaxChecks: 2})
	h.start("k-9-1", string(in))
	for range 60 {
		h.runDue()
		h.clock.Advance(time.Second)
	}
	ex := h.describe("k-9-1")
	calls := h.inv.Calls()
	if ex.Status != localflow.StatusRunning || ex.State != "Hold" || ex.TaskToken == "" || len(calls) != 3 || calls[2].Payload["token"] != ex.TaskToken {
		t.Fatalf("got %s in %s with %d calls; want RUNNING in Hold on the token passed to the hold step", ex.Status, ex.State, len(calls))
	}
	h.clock.Advance(30 * 24 * time.Hour)
	if n := h.runDue(); n != 0 || len(h.inv.Calls()) != 3 {
		t.Fatalf("moved while parked: %d steps", n)
	}
	if err := h.e.SendTaskSuccess(context.Background(), ex.TaskToken, json.RawMessage(`{"decision": "release"}`)); err != nil {
		t.Fatal(err)
	}
	h.runDue()
	ex = h.describe("k-9-1")
	want := []string{"Readable", "Begin", "FirstWait", "Look", "Looked", "Count", "Wait", "Look", "Looked", "NotFound", "Hold", "Decided", "Release", "Done"}
	if diff := cmp.Diff(want, ex.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if ex.Status != localflow.StatusSucceeded {
		t.Errorf("status = %s, want SUCCEEDED", ex.Status)
	}
	var out struct {
		Looks  struct{ Count int } `json:"looks"`
		Result struct {
			Reply struct{ State string } `json:"reply"`
		} `json:"result"`
	}
	if err := json.Unmarshal(ex.Output, &out); err != nil || out.Looks.Count != 2 || out.Result.Reply.State != "released" {
		t.Errorf("output %s: looks.count 2 and result.reply.state released wanted (%v)", ex.Output, err)
	}
}

func TestConfirmFailedCause(t *testing.T) {
	// The Fail state's cause carries the step's error for the operator.
	h := newHarnessFor(t, loadConfirm(t))
	h.inv.reply = confirmFunction([]look{{err: stepErr(publishing.ErrNameInvalidStep)}})
	in, _ := json.Marshal(publishing.ConfirmInput{Key: "k-5", Attempt: 1, Policy: publishing.PolicyAuto, FirstWaitSeconds: 0, WaitSeconds: 0, MaxChecks: 3})
	h.start("k-5-1", string(in))
	h.runDue()
	ex := h.describe("k-5-1")
	want := `InvalidStepRequest: {"errorMessage":"InvalidStepRequest: scripted","errorType":"InvalidStepRequest"}`
	if ex.Status != localflow.StatusFailed || ex.Error != "ConfirmStepFailed" || ex.Cause != want {
		t.Errorf("got %s %s %q, want FAILED ConfirmStepFailed %q", ex.Status, ex.Error, ex.Cause, want)
	}
}
