package ebschedule_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/ebschedule"
	"oncepost/shared/localcron"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

func ptr[T any](v T) *T { return &v }

func target(postID, accountID, slot string) publishing.TargetRef {
	t, err := time.Parse(time.RFC3339Nano, slot)
	if err != nil {
		panic(err)
	}
	return publishing.TargetRef{Post: post.ID(postID), Account: post.AccountID(accountID), Slot: t.UTC()}
}

// wantTarget is the create body Put must send for ref with testConfig.
func wantTarget(ref publishing.TargetRef, at string) wireSchedule {
	slot := ref.Slot.UTC().Format(time.RFC3339Nano)
	return wireSchedule{
		ActionAfterCompletion:      "DELETE",
		Description:                fmt.Sprintf("oncepost target post=%s account=%s slot=%s", ref.Post, ref.Account, slot),
		FlexibleTimeWindow:         &wireFlexibleWindow{Mode: "OFF"},
		GroupName:                  testGroup,
		ScheduleExpression:         "at(" + at + ")",
		ScheduleExpressionTimezone: "UTC",
		State:                      "ENABLED",
		Target: &wireTarget{
			Arn:              testFunction,
			RoleArn:          testRole,
			Input:            ptr(fmt.Sprintf(`{"post_id":%q,"account_id":%q,"slot":%q,"scheduled_time":"<aws.scheduler.scheduled-time>"}`, ref.Post, ref.Account, slot)),
			DeadLetterConfig: &wireDeadLetter{Arn: testDLQ},
			RetryPolicy:      &wireRetryPolicy{MaximumEventAgeInSeconds: ptr(7200), MaximumRetryAttempts: ptr(10)},
		},
	}
}

var ignoreToken = cmpopts.IgnoreFields(wireSchedule{}, "ClientToken")

// methods lists the method and name of each call.
func methods(calls []call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method+" "+c.Name)
	}
	return out
}

// TestPutSendsCreateSchedule checks the request Put sends, field by field
// with the API's JSON types, and reads it back with the SDK's GetSchedule.
// API reference: API_CreateSchedule.html (POST /schedules/Name; body
// ActionAfterCompletion, ClientToken, Description, FlexibleTimeWindow,
// GroupName, ScheduleExpression, ScheduleExpressionTimezone, State,
// Target), API_Target.html, API_RetryPolicy.html,
// API_DeadLetterConfig.html, API_FlexibleTimeWindow.html,
// API_GetSchedule.html.
func TestPutSendsCreateSchedule(t *testing.T) {
	tests := []struct {
		name     string
		ref      publishing.TargetRef
		wantName string
		wantAt   string
	}{
		{"slot on the minute", target("launch", "news", "2026-12-01T09:00:00Z"), "post.launch.news.20261201T090000Z", "2026-12-01T08:59:00"},
		{"slot mid-minute", target("launch", "news", "2026-12-01T09:00:30Z"), "post.launch.news.20261201T090030Z", "2026-12-01T08:59:00"},
		{"slot in another zone", target("launch", "news", "2026-12-01T10:00:59+01:00"), "post.launch.news.20261201T090059Z", "2026-12-01T08:59:00"},
		{"dotted post id is hashed", target("v1.2-notes", "news", "2026-12-01T09:00:00Z"), ebschedule.Name(target("v1.2-notes", "news", "2026-12-01T09:00:00Z")), "2026-12-01T08:59:00"},
		{"sub-second slot is hashed", target("launch", "news", "2026-12-01T09:00:00.5Z"), ebschedule.Name(target("launch", "news", "2026-12-01T09:00:00.5Z")), "2026-12-01T08:59:00"},
		{"new year", target("ny", "news", "2027-01-01T00:00:10Z"), "post.ny.news.20270101T000010Z", "2026-12-31T23:59:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			if err := c.Put(bg, tt.ref); err != nil {
				t.Fatalf("Put: %v", err)
			}
			calls := f.Calls()
			if diff := cmp.Diff([]string{"POST " + tt.wantName}, methods(calls)); diff != "" {
				t.Fatalf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantTarget(tt.ref, tt.wantAt), *calls[0].Body, ignoreToken); diff != "" {
				t.Errorf("CreateSchedule body (-want +got):\n%s", diff)
			}
			if tok := calls[0].Body.ClientToken; !tokenPattern.MatchString(tok) {
				t.Errorf("ClientToken %q does not match [a-zA-Z0-9-_]{1,64}", tok)
			}
			// Read back through the SDK's own deserializer.
			got, err := f.client(1).GetSchedule(bg, &scheduler.GetScheduleInput{Name: aws.String(tt.wantName), GroupName: aws.String(testGroup)})
			if err != nil {
				t.Fatalf("GetSchedule: %v", err)
			}
			if aws.ToString(got.ScheduleExpression) != "at("+tt.wantAt+")" || got.ActionAfterCompletion != types.ActionAfterCompletionDelete ||
				got.FlexibleTimeWindow.Mode != types.FlexibleTimeWindowModeOff || aws.ToInt32(got.Target.RetryPolicy.MaximumEventAgeInSeconds) != 7200 ||
				aws.ToString(got.Target.DeadLetterConfig.Arn) != testDLQ || aws.ToString(got.Target.Input) != *wantTarget(tt.ref, tt.wantAt).Target.Input {
				t.Errorf("GetSchedule = %+v, target %+v", got, got.Target)
			}
		})
	}
}

// TestPutIsIdempotent checks that a repeated or retried create is a no-op:
// the same ClientToken each time, answered with the existing schedule, no
// update, one schedule.
// API reference: API_CreateSchedule.html (ClientToken: "Unique,
// case-sensitive identifier you provide to ensure the idempotency of the
// request"; errors ThrottlingException 429, InternalServerException 500).
func TestPutIsIdempotent(t *testing.T) {
	ref := target("launch", "news", "2026-12-01T09:00:00Z")
	name := ebschedule.Name(ref)
	tests := []struct {
		name   string
		faults []fault
		puts   int
		want   []string
	}{
		{"put twice", nil, 2, []string{"POST " + name, "POST " + name}},
		{"response lost after the create, SDK retries", []fault{{Method: "POST", Status: 500, Code: "InternalServerException", Apply: true}}, 1, []string{"POST " + name, "POST " + name}},
		{"throttled, SDK retries", []fault{{Method: "POST", Status: 429, Code: "ThrottlingException"}}, 1, []string{"POST " + name, "POST " + name}},
		{"lost twice, put again", []fault{{Method: "POST", Status: 500, Code: "InternalServerException", Apply: true}}, 2, []string{"POST " + name, "POST " + name, "POST " + name}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			f.inject(tt.faults...)
			c := newClient(t, f, 3, nil)
			for range tt.puts {
				if err := c.Put(bg, ref); err != nil {
					t.Fatalf("Put: %v", err)
				}
			}
			calls := f.Calls()
			if diff := cmp.Diff(tt.want, methods(calls)); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			for _, cl := range calls[1:] {
				if cl.Body.ClientToken != calls[0].Body.ClientToken {
					t.Errorf("ClientToken %q, first %q: a retried create must carry the same token", cl.Body.ClientToken, calls[0].Body.ClientToken)
				}
			}
			if diff := cmp.Diff(map[string]bool{testGroup + "/" + name: true}, f.Names()); diff != "" {
				t.Errorf("schedules (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPutExistingNameUpdates checks the create-or-update path: a schedule
// created with another configuration (an earlier deploy) answers 409, and
// Put rewrites it whole with UpdateSchedule; the slot-dependent fields are
// unchanged. A schedule that vanished between the two calls is left gone.
// API reference: API_CreateSchedule.html (ConflictException 409),
// API_UpdateSchedule.html (PUT /schedules/Name; "uses all values,
// including empty values ... and overrides the existing schedule";
// ResourceNotFoundException 404).
func TestPutExistingNameUpdates(t *testing.T) {
	ref := target("launch", "news", "2026-12-01T09:00:00Z")
	name := ebschedule.Name(ref)
	newFunction := "arn:aws:lambda:us-east-1:123456789012:function:oncepost-trigger:live"
	tests := []struct {
		name      string
		setup     func(f *fakeScheduler)
		want      []string
		wantStore *wireSchedule
	}{
		{
			name: "configuration changed",
			setup: func(f *fakeScheduler) {
				if err := newClient(t, f, 1, nil).Put(bg, ref); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"POST " + name, "POST " + name, "PUT " + name},
			wantStore: func() *wireSchedule {
				w := wantTarget(ref, "2026-12-01T08:59:00")
				w.Target.Arn = newFunction
				return &w
			}(),
		},
		{
			name: "vanished between create and update",
			setup: func(f *fakeScheduler) {
				f.inject(fault{Method: "POST", Status: http.StatusConflict, Code: "ConflictException"})
			},
			want: []string{"POST " + name, "PUT " + name},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			tt.setup(f)
			c := newClient(t, f, 1, func(c *ebschedule.Config) { c.FunctionARN = newFunction })
			if err := c.Put(bg, ref); err != nil {
				t.Fatalf("Put: %v", err)
			}
			if diff := cmp.Diff(tt.want, methods(f.Calls())); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			s, ok := f.Schedule(testGroup, name)
			var got *wireSchedule
			if ok {
				got = &s.wireSchedule
			}
			if diff := cmp.Diff(tt.wantStore, got, ignoreToken); diff != "" {
				t.Errorf("stored schedule (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPutDue checks that a slot whose early firing time is less than
// MinLead away is refused with ErrDue before anything is sent, and that
// the caller can then always enqueue it within SQS's delay limit.
// API reference: API_CreateSchedule.html (ScheduleExpression at(); the
// reference does not say what happens to an at() in the past).
func TestPutDue(t *testing.T) {
	tests := []struct {
		name    string
		slot    time.Time
		wantDue bool
	}{
		{"fires in 2 minutes", testNow.Add(3 * time.Minute), false},
		{"fires in exactly MinLead", testNow.Add(2 * time.Minute), false},
		{"fires in 59 s", testNow.Add(2*time.Minute - time.Second), true},
		{"fires now", testNow.Add(time.Minute), true},
		{"slot now", testNow, true},
		{"slot past", testNow.Add(-time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			err := c.Put(bg, publishing.TargetRef{Post: "p", Account: "a", Slot: tt.slot})
			if got := errors.Is(err, ebschedule.ErrDue); got != tt.wantDue {
				t.Fatalf("Put(slot %s) = %v, want ErrDue %v", tt.slot.Format(time.TimeOnly), err, tt.wantDue)
			}
			if tt.wantDue {
				if n := len(f.Calls()); n != 0 {
					t.Errorf("%d requests sent for a due slot", n)
				}
				if d := ebschedule.Delay(tt.slot, testNow); d >= ebschedule.MaxDelay {
					t.Errorf("Delay = %s for a due slot: not enqueueable", d)
				}
			}
		})
	}
}

// TestPutRefusesBadTargets checks refusals made before sending.
// API reference: API_CreateSchedule.html (at() years; Name constraints).
func TestPutRefusesBadTargets(t *testing.T) {
	slot := testNow.Add(time.Hour)
	tests := []struct {
		name string
		ref  publishing.TargetRef
	}{
		{"empty post", publishing.TargetRef{Account: "a", Slot: slot}},
		{"empty account", publishing.TargetRef{Post: "p", Slot: slot}},
		{"zero slot", publishing.TargetRef{Post: "p", Account: "a"}},
		{"year 2200", publishing.TargetRef{Post: "p", Account: "a", Slot: time.Date(2200, 1, 1, 0, 5, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			err := newClient(t, f, 1, nil).Put(bg, tt.ref)
			if !errors.Is(err, ebschedule.ErrInvalid) {
				t.Errorf("Put = %v, want ErrInvalid", err)
			}
			if n := len(f.Calls()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestDelete checks DeleteSchedule's request and that a missing schedule
// is success.
// API reference: API_DeleteSchedule.html (DELETE
// /schedules/Name?clientToken=ClientToken&groupName=GroupName, no body,
// 200 with an empty body; ResourceNotFoundException 404).
func TestDelete(t *testing.T) {
	ref := target("launch", "news", "2026-12-01T09:00:00Z")
	name := ebschedule.Name(ref)
	tests := []struct {
		name   string
		exists bool
	}{
		{"existing", true},
		{"missing", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			if tt.exists {
				if err := c.Put(bg, ref); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Delete(bg, ref); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			calls := f.Calls()
			last := calls[len(calls)-1]
			if last.Method != http.MethodDelete || last.Name != name || last.Query.Get("groupName") != testGroup || !tokenPattern.MatchString(last.Query.Get("clientToken")) {
				t.Errorf("last call = %s %s ?%s, want DELETE %s ?groupName=%s&clientToken=…", last.Method, last.Name, last.Query.Encode(), name, testGroup)
			}
			if diff := cmp.Diff(map[string]bool{}, f.Names()); diff != "" {
				t.Errorf("schedules left (-want +got):\n%s", diff)
			}
			// Twice is a no-op too.
			if err := c.Delete(bg, ref); err != nil {
				t.Errorf("second Delete: %v", err)
			}
		})
	}
}

// TestMove checks a reschedule: create the new slot's schedule, then
// delete the old one (never UpdateSchedule in place).
// API reference: API_CreateSchedule.html, API_DeleteSchedule.html.
func TestMove(t *testing.T) {
	a := target("launch", "news", "2026-12-01T09:00:00Z")
	b := target("launch", "news", "2026-12-01T10:30:00Z")
	due := publishing.TargetRef{Post: "launch", Account: "news", Slot: testNow.Add(90 * time.Second)}
	tests := []struct {
		name      string
		from, to  publishing.TargetRef
		wantErr   error
		wantCalls []string
		wantLeft  map[string]bool
	}{
		{"later slot", a, b, nil, []string{"POST " + ebschedule.Name(a), "POST " + ebschedule.Name(b), "DELETE " + ebschedule.Name(a)},
			map[string]bool{testGroup + "/" + ebschedule.Name(b): true}},
		{"same slot", a, a, nil, []string{"POST " + ebschedule.Name(a), "POST " + ebschedule.Name(a)},
			map[string]bool{testGroup + "/" + ebschedule.Name(a): true}},
		{"to a due slot", a, due, ebschedule.ErrDue, []string{"POST " + ebschedule.Name(a), "DELETE " + ebschedule.Name(a)},
			map[string]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			if err := c.Put(bg, tt.from); err != nil {
				t.Fatal(err)
			}
			err := c.Move(bg, tt.from, tt.to)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Move = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantCalls, methods(f.Calls())); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLeft, f.Names()); diff != "" {
				t.Errorf("schedules (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMoveKeepsOldScheduleWhenCreateFails checks create-before-delete: a
// failed create leaves the old schedule, so the target is never without
// one.
// API reference: API_CreateSchedule.html (ThrottlingException 429).
func TestMoveKeepsOldScheduleWhenCreateFails(t *testing.T) {
	a := target("launch", "news", "2026-12-01T09:00:00Z")
	b := target("launch", "news", "2026-12-01T10:30:00Z")
	f := newFake(t, testGroup)
	c := newClient(t, f, 1, nil)
	if err := c.Put(bg, a); err != nil {
		t.Fatal(err)
	}
	f.inject(fault{Method: "POST", Status: http.StatusTooManyRequests, Code: "ThrottlingException"})
	if err := c.Move(bg, a, b); !errors.Is(err, ebschedule.ErrThrottled) {
		t.Fatalf("Move = %v, want ErrThrottled", err)
	}
	if diff := cmp.Diff(map[string]bool{testGroup + "/" + ebschedule.Name(a): true}, f.Names()); diff != "" {
		t.Errorf("schedules (-want +got):\n%s", diff)
	}
}

// TestOlderRequestNeverOverwritesNewer plays requests of a reschedule
// delivered out of order (a retry of an older Put or Move arriving after
// a newer Move) and checks that the schedule of the current slot is
// exactly what a fresh Put of it writes, and that any stale schedule left
// carries its own old slot in its Input, which the trigger compares with
// the target's current slot and drops.
// API reference: API_CreateSchedule.html, API_UpdateSchedule.html (no
// condition or version on an update: the design never relies on one),
// API_DeleteSchedule.html.
func TestOlderRequestNeverOverwritesNewer(t *testing.T) {
	a := target("launch", "news", "2026-12-01T09:00:00Z")
	b := target("launch", "news", "2026-12-01T10:30:00Z")
	cc := target("launch", "news", "2026-12-02T08:00:00Z")
	type step func(c *ebschedule.Client) error
	put := func(r publishing.TargetRef) step { return func(c *ebschedule.Client) error { return c.Put(bg, r) } }
	move := func(from, to publishing.TargetRef) step {
		return func(c *ebschedule.Client) error { return c.Move(bg, from, to) }
	}
	tests := []struct {
		name    string
		steps   []step
		current publishing.TargetRef
	}{
		{"late Put of the old slot after a move", []step{put(a), move(a, b), put(a)}, b},
		{"late first move after a second move", []step{put(a), move(a, b), move(b, cc), move(a, b)}, cc},
		{"late Put of the old slot after two moves", []step{put(a), move(a, b), move(b, cc), put(a), put(b)}, cc},
		{"move back to the first slot, then a late Put of the middle one", []step{put(a), move(a, b), move(b, a), put(b)}, a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// What a fresh Put of the current slot writes.
			ref := newFake(t, testGroup)
			if err := newClient(t, ref, 1, nil).Put(bg, tt.current); err != nil {
				t.Fatal(err)
			}
			want, _ := ref.Schedule(testGroup, ebschedule.Name(tt.current))

			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			for i, s := range tt.steps {
				if err := s(c); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			got, ok := f.Schedule(testGroup, ebschedule.Name(tt.current))
			if !ok {
				t.Fatalf("no schedule for the current slot %s", tt.current.Slot)
			}
			if diff := cmp.Diff(want.wireSchedule, got.wireSchedule); diff != "" {
				t.Errorf("current slot's schedule (-fresh +got):\n%s", diff)
			}
			for key := range f.Names() {
				name := strings.TrimPrefix(key, testGroup+"/")
				in, err := f.Fire(testGroup, name)
				if err != nil {
					t.Fatal(err)
				}
				ev, err := ebschedule.DecodeInput([]byte(in))
				if err != nil {
					t.Fatal(err)
				}
				if ebschedule.Name(ev.TargetRef) != name {
					t.Errorf("schedule %s carries target %+v: a schedule's input must be its own slot", name, ev.TargetRef)
				}
				if stale := !ev.Slot.Equal(tt.current.Slot); stale && name == ebschedule.Name(tt.current) {
					t.Errorf("the current slot's schedule is stale")
				}
			}
		})
	}
}

// TestConcurrentReschedulesKeepNewest races late Puts of an old slot with
// the Move away from it (run with -race): whatever the interleaving, the
// new slot's schedule is exactly what a fresh Put writes.
// API reference: API_CreateSchedule.html (ConflictException 409),
// API_UpdateSchedule.html, API_DeleteSchedule.html.
func TestConcurrentReschedulesKeepNewest(t *testing.T) {
	a := target("launch", "news", "2026-12-01T09:00:00Z")
	b := target("launch", "news", "2026-12-01T10:30:00Z")
	ref := newFake(t, testGroup)
	if err := newClient(t, ref, 1, nil).Put(bg, b); err != nil {
		t.Fatal(err)
	}
	want, _ := ref.Schedule(testGroup, ebschedule.Name(b))

	f := newFake(t, testGroup)
	c := newClient(t, f, 1, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				err = c.Put(bg, a)
			} else {
				err = c.Move(bg, a, b)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}
	got, ok := f.Schedule(testGroup, ebschedule.Name(b))
	if !ok {
		t.Fatal("no schedule for the new slot")
	}
	if diff := cmp.Diff(want.wireSchedule, got.wireSchedule); diff != "" {
		t.Errorf("new slot's schedule (-fresh +got):\n%s", diff)
	}
}

// TestErrorsTranslated checks that Scheduler's exceptions reach callers as
// the package's sentinel errors, naming the operation and schedule, and
// that a delete of a missing schedule is success.
// API reference: API_CreateSchedule.html, API_UpdateSchedule.html and
// API_DeleteSchedule.html, "Errors": ConflictException 409,
// InternalServerException 500, ResourceNotFoundException 404,
// ServiceQuotaExceededException 402, ThrottlingException 429,
// ValidationException 400.
func TestErrorsTranslated(t *testing.T) {
	ref := target("launch", "news", "2026-12-01T09:00:00Z")
	name := ebschedule.Name(ref)
	put := func(c *ebschedule.Client) error { return c.Put(bg, ref) }
	del := func(c *ebschedule.Client) error { return c.Delete(bg, ref) }
	recurring := func(c *ebschedule.Client) error {
		return c.PutRecurring(bg, "digest", "cron(0 9 ? * MON *)", "Europe/Berlin", []byte(`{}`))
	}
	conflict := fault{Method: "POST", Status: 409, Code: "ConflictException"}
	tests := []struct {
		name   string
		group  string
		faults []fault
		op     func(*ebschedule.Client) error
		want   error // nil: success
		apiErr any   // non-nil: the SDK error stays reachable (not translated)
	}{
		{"create throttled", testGroup, []fault{{Method: "POST", Status: 429, Code: "ThrottlingException"}}, put, ebschedule.ErrThrottled, nil},
		{"create invalid", testGroup, []fault{{Method: "POST", Status: 400, Code: "ValidationException"}}, put, ebschedule.ErrInvalid, nil},
		{"create over quota", testGroup, []fault{{Method: "POST", Status: 402, Code: "ServiceQuotaExceededException"}}, put, ebschedule.ErrQuotaExceeded, nil},
		{"create into a missing group", "nosuchgroup", nil, put, ebschedule.ErrNotFound, nil},
		{"create internal error", testGroup, []fault{{Method: "POST", Status: 500, Code: "InternalServerException"}}, put, nil, new(*types.InternalServerException)},
		{"update conflict", testGroup, []fault{conflict, {Method: "PUT", Status: 409, Code: "ConflictException"}}, put, ebschedule.ErrConflict, nil},
		{"update throttled", testGroup, []fault{conflict, {Method: "PUT", Status: 429, Code: "ThrottlingException"}}, put, ebschedule.ErrThrottled, nil},
		{"target gone before update", testGroup, []fault{conflict}, put, nil, nil},
		{"recurring gone before update", testGroup, []fault{conflict}, recurring, ebschedule.ErrNotFound, nil},
		{"delete missing", testGroup, nil, del, nil, nil},
		{"delete conflict", testGroup, []fault{{Method: "DELETE", Status: 409, Code: "ConflictException"}}, del, ebschedule.ErrConflict, nil},
		{"delete throttled", testGroup, []fault{{Method: "DELETE", Status: 429, Code: "ThrottlingException"}}, del, ebschedule.ErrThrottled, nil},
		{"delete invalid", testGroup, []fault{{Method: "DELETE", Status: 400, Code: "ValidationException"}}, del, ebschedule.ErrInvalid, nil},
	}
	sentinels := []error{ebschedule.ErrConflict, ebschedule.ErrNotFound, ebschedule.ErrThrottled, ebschedule.ErrInvalid, ebschedule.ErrQuotaExceeded, ebschedule.ErrDue}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			f.inject(tt.faults...)
			c := newClient(t, f, 1, func(c *ebschedule.Config) { c.Group = tt.group })
			err := tt.op(c)
			if tt.want == nil && tt.apiErr == nil {
				if err != nil {
					t.Fatalf("err = %v, want success", err)
				}
				return
			}
			if err == nil {
				t.Fatal("err = nil")
			}
			for _, s := range sentinels {
				if got, want := errors.Is(err, s), s == tt.want; got != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, s, got, want)
				}
			}
			if tt.apiErr != nil && !errors.As(err, tt.apiErr) {
				t.Errorf("err = %v: the SDK error should stay reachable", err)
			}
			if tt.op != nil && !strings.Contains(err.Error(), name) && !strings.Contains(err.Error(), "digest") {
				t.Errorf("err = %v: does not name the schedule", err)
			}
		})
	}
}

// TestPutRecurring checks recurring schedules: the request for cron and
// rate expressions in a zone, and the refusals made before sending
// (checked with localcron's parser).
// API reference: API_CreateSchedule.html (ScheduleExpression cron()/rate(),
// ScheduleExpressionTimezone 1-50, Name [0-9a-zA-Z-_.]{1,64}),
// API_Target.html (Input: well-formed JSON for a templated Lambda target).
func TestPutRecurring(t *testing.T) {
	tests := []struct {
		name, sched, expr, zone, input string
		wantZone                       string
		wantErr                        error
	}{
		{"cron in Berlin", "weekly-digest", "cron(0 9 ? * MON *)", "Europe/Berlin", `{"job":"digest"}`, "Europe/Berlin", nil},
		{"rate in UTC", "sweeper", "rate(5 minutes)", "", `{"job":"sweep"}`, "UTC", nil},
		{"cron last weekday", "month-end", "cron(30 17 LW * ? *)", "America/New_York", `{}`, "America/New_York", nil},
		{"at() refused", "once", "at(2026-12-01T09:00:00)", "", `{}`, "", ebschedule.ErrInvalid},
		{"bad cron field", "bad", "cron(0 25 * * ? *)", "", `{}`, "", ebschedule.ErrInvalid},
		{"cron with both days", "bad", "cron(0 9 * * MON *)", "", `{}`, "", ebschedule.ErrInvalid},
		{"singular unit", "bad", "rate(5 minute)", "", `{}`, "", ebschedule.ErrInvalid},
		{"unknown zone", "bad", "rate(1 hour)", "Mars/Base", `{}`, "", ebschedule.ErrInvalid},
		{"process-local zone", "bad", "rate(1 hour)", "Local", `{}`, "", ebschedule.ErrInvalid},
		{"input not JSON", "bad", "rate(1 hour)", "", `job=sweep`, "", ebschedule.ErrInvalid},
		{"empty input", "bad", "rate(1 hour)", "", ``, "", ebschedule.ErrInvalid},
		{"name with a slash", "a/b", "rate(1 hour)", "", `{}`, "", ebschedule.ErrInvalid},
		{"name too long", strings.Repeat("n", 65), "rate(1 hour)", "", `{}`, "", ebschedule.ErrInvalid},
		{"target name prefix", "post.x", "rate(1 hour)", "", `{}`, "", ebschedule.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			err := c.PutRecurring(bg, tt.sched, tt.expr, tt.zone, []byte(tt.input))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("PutRecurring = %v, want %v", err, tt.wantErr)
				}
				if n := len(f.Calls()); n != 0 {
					t.Errorf("%d requests sent", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("PutRecurring: %v", err)
			}
			want := wireSchedule{
				ActionAfterCompletion:      "NONE",
				Description:                "oncepost recurring schedule " + tt.sched,
				FlexibleTimeWindow:         &wireFlexibleWindow{Mode: "OFF"},
				GroupName:                  testGroup,
				ScheduleExpression:         tt.expr,
				ScheduleExpressionTimezone: tt.wantZone,
				State:                      "ENABLED",
				Target: &wireTarget{Arn: testFunction, RoleArn: testRole, Input: ptr(tt.input), DeadLetterConfig: &wireDeadLetter{Arn: testDLQ},
					RetryPolicy: &wireRetryPolicy{MaximumEventAgeInSeconds: ptr(7200), MaximumRetryAttempts: ptr(10)}},
			}
			calls := f.Calls()
			if diff := cmp.Diff([]string{"POST " + tt.sched}, methods(calls)); diff != "" {
				t.Fatalf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, *calls[0].Body, ignoreToken); diff != "" {
				t.Errorf("CreateSchedule body (-want +got):\n%s", diff)
			}
			// Replacing it: 409, then a full UpdateSchedule; deleting it.
			if err := c.PutRecurring(bg, tt.sched, tt.expr, tt.zone, []byte(`{"v":2}`)); err != nil {
				t.Fatalf("second PutRecurring: %v", err)
			}
			if s, _ := f.Schedule(testGroup, tt.sched); aws.ToString(s.Target.Input) != `{"v":2}` {
				t.Errorf("after replacing, Input = %q", aws.ToString(s.Target.Input))
			}
			if err := c.DeleteRecurring(bg, tt.sched); err != nil {
				t.Fatalf("DeleteRecurring: %v", err)
			}
			if err := c.DeleteRecurring(bg, tt.sched); err != nil {
				t.Fatalf("second DeleteRecurring: %v", err)
			}
			if diff := cmp.Diff([]string{"POST " + tt.sched, "POST " + tt.sched, "PUT " + tt.sched, "DELETE " + tt.sched, "DELETE " + tt.sched}, methods(f.Calls())); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWrittenExpressionsParseWithLocalcron checks that every expression
// and zone the package sent, for targets over the whole slot range and
// for recurring schedules, is accepted by localcron's parser, and that a
// target's at() fires exactly at FireTime.
// API reference: API_CreateSchedule.html (ScheduleExpression,
// ScheduleExpressionTimezone).
func TestWrittenExpressionsParseWithLocalcron(t *testing.T) {
	f := newFake(t, testGroup)
	c := newClient(t, f, 1, func(c *ebschedule.Config) {
		c.Now = func() time.Time { return time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC) }
	})
	slots := []time.Time{
		time.Date(1970, 1, 1, 0, 5, 0, 0, time.UTC),
		time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		time.Date(2028, 2, 29, 0, 0, 30, 0, time.UTC),
		time.Date(2026, 3, 29, 2, 30, 0, 0, time.FixedZone("CET", 3600)),
		time.Date(2199, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	for i := range 200 {
		slots = append(slots, time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*(1<<52+7919)))
	}
	for i, slot := range slots {
		if err := c.Put(bg, publishing.TargetRef{Post: post.ID(fmt.Sprint("p", i)), Account: "a", Slot: slot}); err != nil {
			t.Fatalf("Put(%s): %v", slot, err)
		}
	}
	if err := c.PutRecurring(bg, "digest", "cron(0 9 ? * MON-FRI *)", "Europe/Berlin", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.PutRecurring(bg, "sweep", "rate(1 minute)", "", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	calls := f.Calls()
	if len(calls) != len(slots)+2 {
		t.Fatalf("%d calls, want %d", len(calls), len(slots)+2)
	}
	for i, cl := range calls {
		s, err := localcron.Parse(cl.Body.ScheduleExpression, cl.Body.ScheduleExpressionTimezone, testNow)
		if err != nil {
			t.Errorf("localcron refuses %q in %q: %v", cl.Body.ScheduleExpression, cl.Body.ScheduleExpressionTimezone, err)
			continue
		}
		if i < len(slots) {
			fire := ebschedule.FireTime(slots[i])
			if next, ok := s.Next(fire.Add(-time.Nanosecond)); !ok || !next.Equal(fire) {
				t.Errorf("%s fires at %s, want %s", cl.Body.ScheduleExpression, next, fire)
			}
		}
	}
}

// TestNewValidatesConfig checks configuration refusals, each naming the
// field, against the API's constraints.
// API reference: API_Target.html (RoleArn pattern), API_DeadLetterConfig.html
// (SQS ARN pattern), API_RetryPolicy.html (60-86400 s, 0-185 attempts),
// API_CreateSchedule.html (GroupName).
func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*ebschedule.Config)
		field string // "" = valid
	}{
		{"valid", func(*ebschedule.Config) {}, ""},
		{"default group", func(c *ebschedule.Config) { c.Group = "" }, ""},
		{"default retry", func(c *ebschedule.Config) { c.Retry = nil }, ""},
		{"no retries", func(c *ebschedule.Config) { c.Retry = &ebschedule.RetryPolicy{MaxEventAge: time.Minute} }, ""},
		{"qualified function", func(c *ebschedule.Config) { c.FunctionARN += ":live" }, ""},
		{"group with a slash", func(c *ebschedule.Config) { c.Group = "a/b" }, "Group"},
		{"no function", func(c *ebschedule.Config) { c.FunctionARN = "" }, "FunctionARN"},
		{"function is a queue", func(c *ebschedule.Config) { c.FunctionARN = testDLQ }, "FunctionARN"},
		{"no role", func(c *ebschedule.Config) { c.RoleARN = "" }, "RoleARN"},
		{"role is a user", func(c *ebschedule.Config) { c.RoleARN = "arn:aws:iam::123456789012:user/bob" }, "RoleARN"},
		{"no dead-letter queue", func(c *ebschedule.Config) { c.DeadLetterARN = "" }, "DeadLetterARN"},
		{"FIFO dead-letter queue", func(c *ebschedule.Config) { c.DeadLetterARN += ".fifo" }, "DeadLetterARN"},
		{"event age too short", func(c *ebschedule.Config) { c.Retry = &ebschedule.RetryPolicy{MaxEventAge: 59 * time.Second} }, "Retry.MaxEventAge"},
		{"event age too long", func(c *ebschedule.Config) { c.Retry = &ebschedule.RetryPolicy{MaxEventAge: 25 * time.Hour} }, "Retry.MaxEventAge"},
		{"event age fractional", func(c *ebschedule.Config) { c.Retry = &ebschedule.RetryPolicy{MaxEventAge: 90500 * time.Millisecond} }, "Retry.MaxEventAge"},
		{"too many attempts", func(c *ebschedule.Config) {
			c.Retry = &ebschedule.RetryPolicy{MaxEventAge: time.Hour, MaxAttempts: 186}
		}, "Retry.MaxAttempts"},
		{"negative attempts", func(c *ebschedule.Config) { c.Retry = &ebschedule.RetryPolicy{MaxEventAge: time.Hour, MaxAttempts: -1} }, "Retry.MaxAttempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.mod(&cfg)
			_, err := ebschedule.New(&scheduler.Client{}, cfg)
			if tt.field == "" {
				if err != nil {
					t.Errorf("New = %v", err)
				}
				return
			}
			if !errors.Is(err, ebschedule.ErrInvalid) || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("New = %v, want ErrInvalid naming %s", err, tt.field)
			}
		})
	}
	if _, err := ebschedule.New(nil, testConfig()); !errors.Is(err, ebschedule.ErrInvalid) {
		t.Errorf("New(nil) = %v", err)
	}
}

// TestDefaultRetryPolicy checks what a nil Config.Retry sends.
// API reference: API_RetryPolicy.html (MaximumEventAgeInSeconds 60-86400,
// MaximumRetryAttempts 0-185).
func TestDefaultRetryPolicy(t *testing.T) {
	f := newFake(t, "default")
	c := newClient(t, f, 1, func(c *ebschedule.Config) { c.Retry, c.Group = nil, "" })
	if c.Group() != "default" {
		t.Errorf("Group() = %q", c.Group())
	}
	if err := c.Put(bg, target("p", "a", "2026-12-01T09:00:00Z")); err != nil {
		t.Fatal(err)
	}
	got := f.Calls()[0].Body
	want := &wireRetryPolicy{MaximumEventAgeInSeconds: ptr(3600), MaximumRetryAttempts: ptr(185)}
	if diff := cmp.Diff(want, got.Target.RetryPolicy); diff != "" {
		t.Errorf("RetryPolicy (-want +got):\n%s", diff)
	}
	if got.GroupName != "default" {
		t.Errorf("GroupName = %q", got.GroupName)
	}
}
