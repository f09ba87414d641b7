package awsschedule_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/awsschedule"
	"oncepost/shared/ebschedule"
	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// newScheduler is a PostScheduler on a test stack (dynalite, fauxqs, the
// Scheduler stand-in).
func newScheduler(t *testing.T, s *stacktest.Stack) *awsschedule.PostScheduler {
	t.Helper()
	cfg := emulatortest.AWSConfig(t, s.Env()["AWS_ENDPOINT_URL_SCHEDULER"])
	slots, err := ebschedule.New(scheduler.NewFromConfig(cfg), ebschedule.Config{
		Group: stacktest.ScheduleGroup, FunctionARN: stacktest.TriggerFunctionARN,
		RoleARN: stacktest.SchedulerRoleARN, DeadLetterARN: stacktest.ScheduleDeadLetterARN,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &awsschedule.PostScheduler{Store: s.Store, Slots: slots, Trigger: &publishing.Trigger{Posts: s.Store, Queue: s.Queue}}
}

// queued lists the posts of the jobs on the queue, and acks them.
func queued(t *testing.T, s *stacktest.Stack) []string {
	t.Helper()
	ctx := context.Background()
	out := []string{}
	msgs, err := s.Queue.Receive(ctx, 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		j, err := publishing.DecodeJob(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(j.Post)+"/"+string(j.Account))
		if err := s.Queue.Ack(ctx, m.Receipt); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A post's distinct slots get one schedule each; a slot too near to
// schedule has its targets queued now; a key used before schedules
// nothing; a reschedule puts the new slot's schedule.
func TestPostScheduler(t *testing.T) {
	s := stacktest.New(t)
	ps := newScheduler(t, s)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	far, farther, near := now.Add(time.Hour), now.Add(2*time.Hour), now // near: its job is not delayed
	target := func(a post.AccountID, slot time.Time) post.Target {
		return post.Target{Account: a, Slot: slot, Status: post.Scheduled, UpdatedAt: now}
	}
	key := &publishing.IdempotencyRecord{Scope: "arn:aws:iam::000000000000:user/cms", Key: "k-1", Fingerprint: "fp", Status: 201, Response: []byte(`{}`)}
	tests := []struct {
		name          string
		p             post.Post
		key           *publishing.IdempotencyRecord
		wantErr       bool
		wantSchedules []string
		wantQueued    []string
	}{
		{"two slots, three targets", post.Post{ID: "p-far", Body: "b", CreatedAt: now, Targets: []post.Target{target("a", far), target("b", farther), target("c", far)}}, nil,
			false, []string{ebschedule.SlotName(far), ebschedule.SlotName(farther)}, []string{}},
		{"a slot too near", post.Post{ID: "p-near", Body: "b", CreatedAt: now, Targets: []post.Target{target("a", near)}}, nil,
			false, []string{ebschedule.SlotName(far), ebschedule.SlotName(farther)}, []string{"p-near/a"}},
		{"with a key", post.Post{ID: "p-key", Body: "b", CreatedAt: now, Targets: []post.Target{target("a", now.Add(3*time.Hour)), target("b", near)}}, key,
			false, []string{ebschedule.SlotName(far), ebschedule.SlotName(farther), ebschedule.SlotName(now.Add(3 * time.Hour))}, []string{"p-key/b"}},
		{"the key again", post.Post{ID: "p-key-again", Body: "b", CreatedAt: now, Targets: []post.Target{target("a", now.Add(4*time.Hour)), target("b", near)}}, key,
			true, []string{ebschedule.SlotName(far), ebschedule.SlotName(farther), ebschedule.SlotName(now.Add(3 * time.Hour))}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ps.CreatePost(ctx, tt.p, tt.key)
			if tt.wantErr != errors.As(err, new(*publishing.KeyExistsError)) || (!tt.wantErr && err != nil) {
				t.Fatalf("CreatePost = %v, want a KeyExistsError: %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantSchedules, s.Schedules.Names()); diff != "" {
				t.Errorf("schedules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantQueued, queued(t, s)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := s.Store.GetPost(ctx, "p-key-again"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetPost(p-key-again) = %v, want post.ErrNotFound", err)
	}
	later := now.Add(5 * time.Hour)
	if err := ps.Reschedule(ctx, "p-far", "b", later); err != nil {
		t.Fatal(err)
	}
	if got := s.Schedules.Names(); !cmp.Equal(got[len(got)-1], ebschedule.SlotName(later)) {
		t.Errorf("schedules after the reschedule: %v, want %s among them", got, ebschedule.SlotName(later))
	}
}
