package ebschedule_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ebschedule"
	"oncepost/shared/publishing"
)

// TestInputCarriesScheduledTimeNotExecutionID checks the Input Put
// writes: the target and the literal <aws.scheduler.scheduled-time>
// (unescaped, so Scheduler replaces it), never the execution id, and ids
// that contain '<' cannot form a context attribute.
// API reference: API_Target.html (Input: well-formed JSON for a Lambda
// target); https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html.
func TestInputCarriesScheduledTimeNotExecutionID(t *testing.T) {
	tests := []struct {
		name string
		ref  publishing.TargetRef
		want string
	}{
		{"plain", publishing.TargetRef{Post: "launch", Account: "news", Slot: at("2026-12-01T09:00:30Z")},
			`{"post_id":"launch","account_id":"news","slot":"2026-12-01T09:00:30Z","scheduled_time":"<aws.scheduler.scheduled-time>"}`},
		{"slot in another zone, fraction kept", publishing.TargetRef{Post: "launch", Account: "news", Slot: at("2026-12-01T10:00:30.25+01:00")},
			`{"post_id":"launch","account_id":"news","slot":"2026-12-01T09:00:30.25Z","scheduled_time":"<aws.scheduler.scheduled-time>"}`},
		{"an id that looks like an attribute", publishing.TargetRef{Post: "<aws.scheduler.execution-id>", Account: "news", Slot: at("2026-12-01T09:00:30Z")},
			`{"post_id":"\u003caws.scheduler.execution-id\u003e","account_id":"news","slot":"2026-12-01T09:00:30Z","scheduled_time":"<aws.scheduler.scheduled-time>"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			if err := newClient(t, f, 1, nil).Put(bg, tt.ref); err != nil {
				t.Fatal(err)
			}
			got := *f.Calls()[0].Body.Target.Input
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Input (-want +got):\n%s", diff)
			}
			if strings.Count(got, "<aws.scheduler.") != 1 || strings.Contains(got, "execution-id>") {
				t.Errorf("Input %s: want exactly one context attribute, the scheduled time", got)
			}
			// As the Lambda sees it once Scheduler replaced the attribute.
			in, err := ebschedule.DecodeInput([]byte(strings.Replace(got, "<aws.scheduler.scheduled-time>", "2026-12-01T08:59:00Z", 1)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ebschedule.Input{TargetRef: publishing.TargetRef{Post: tt.ref.Post, Account: tt.ref.Account, Slot: tt.ref.Slot.UTC()},
				ScheduledTime: at("2026-12-01T08:59:00Z")}, in); diff != "" {
				t.Errorf("DecodeInput (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeInput checks the trigger's decoding of the event: every field
// required, unknown fields refused, errors naming the field.
// Reference: https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html
// (scheduled-time, e.g. 2022-03-22T18:59:43Z).
func TestDecodeInput(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    ebschedule.Input
		wantErr string
	}{
		{"valid", `{"post_id":"p","account_id":"a","slot":"2026-12-01T09:00:00Z","scheduled_time":"2026-12-01T08:59:00Z"}`,
			ebschedule.Input{TargetRef: publishing.TargetRef{Post: "p", Account: "a", Slot: at("2026-12-01T09:00:00Z")}, ScheduledTime: at("2026-12-01T08:59:00Z")}, ""},
		{"offsets become UTC", `{"post_id":"p","account_id":"a","slot":"2026-12-01T10:00:00+01:00","scheduled_time":"2026-12-01T09:59:00+01:00"}`,
			ebschedule.Input{TargetRef: publishing.TargetRef{Post: "p", Account: "a", Slot: at("2026-12-01T09:00:00Z")}, ScheduledTime: at("2026-12-01T08:59:00Z")}, ""},
		{"attribute not replaced", `{"post_id":"p","account_id":"a","slot":"2026-12-01T09:00:00Z","scheduled_time":"<aws.scheduler.scheduled-time>"}`, ebschedule.Input{}, "scheduled_time"},
		{"no post", `{"account_id":"a","slot":"2026-12-01T09:00:00Z","scheduled_time":"2026-12-01T08:59:00Z"}`, ebschedule.Input{}, "post_id is missing"},
		{"empty account", `{"post_id":"p","account_id":"","slot":"2026-12-01T09:00:00Z","scheduled_time":"2026-12-01T08:59:00Z"}`, ebschedule.Input{}, "account_id is missing"},
		{"no slot", `{"post_id":"p","account_id":"a","scheduled_time":"2026-12-01T08:59:00Z"}`, ebschedule.Input{}, "slot is missing"},
		{"bad slot", `{"post_id":"p","account_id":"a","slot":"tomorrow","scheduled_time":"2026-12-01T08:59:00Z"}`, ebschedule.Input{}, `slot "tomorrow"`},
		{"no scheduled time", `{"post_id":"p","account_id":"a","slot":"2026-12-01T09:00:00Z"}`, ebschedule.Input{}, "scheduled_time is missing"},
		{"execution id smuggled in", `{"post_id":"p","account_id":"a","slot":"2026-12-01T09:00:00Z","scheduled_time":"2026-12-01T08:59:00Z","execution_id":"x"}`, ebschedule.Input{}, `unknown field "execution_id"`},
		{"trailing data", `{"post_id":"p","account_id":"a","slot":"2026-12-01T09:00:00Z","scheduled_time":"2026-12-01T08:59:00Z"} {}`, ebschedule.Input{}, "after the JSON object"},
		{"not JSON", `post=p`, ebschedule.Input{}, "schedule input"},
		{"slot schedule", `{"slot":"2026-12-01T09:00:00Z","scheduled_time":"2026-12-01T08:59:00Z"}`,
			ebschedule.Input{TargetRef: publishing.TargetRef{Slot: at("2026-12-01T09:00:00Z")}, ScheduledTime: at("2026-12-01T08:59:00Z")}, ""},
		{"slot schedule without slot", `{"scheduled_time":"2026-12-01T08:59:00Z"}`, ebschedule.Input{}, "slot is missing"},
		{"slot schedule with empty post", `{"post_id":"","slot":"2026-12-01T09:00:00Z","scheduled_time":"2026-12-01T08:59:00Z"}`, ebschedule.Input{}, "post_id is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ebschedule.DecodeInput([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("DecodeInput = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeInput (-want +got):\n%s", diff)
			}
			if want := tt.want.Post == ""; got.AllDue() != want {
				t.Errorf("AllDue = %v, want %v", got.AllDue(), want)
			}
			if got.Slot.Location() != time.UTC || got.ScheduledTime.Location() != time.UTC {
				t.Errorf("times not in UTC: %v %v", got.Slot, got.ScheduledTime)
			}
		})
	}
}
