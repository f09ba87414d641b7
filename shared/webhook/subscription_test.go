package webhook

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// NewSubscription refuses bad input with a field error per field, and
// makes the rest: an id, a secret, the events without repeats.
func TestNewSubscription(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		req  SubscriptionRequest
		// wantFields are the fields refused, in order; none when accepted.
		wantFields []string
		// wantEvents are the accepted subscription's events.
		wantEvents []publishing.EventType
	}{
		{name: "every event", req: SubscriptionRequest{URL: "https://hooks.example.com/in"}},
		{name: "some events, one twice", req: SubscriptionRequest{URL: "https://hooks.example.com/in", Events: []string{"post.failed", "post.held", "post.failed"}},
			wantEvents: []publishing.EventType{publishing.EventFailed, publishing.EventHeld}},
		{name: "private allowed", req: SubscriptionRequest{URL: "https://10.0.0.1/in", AllowPrivate: true, Description: "the CMS"}},
		{name: "no url", req: SubscriptionRequest{}, wantFields: []string{"url"}},
		{name: "metadata address", req: SubscriptionRequest{URL: "https://169.254.169.254/"}, wantFields: []string{"url"}},
		{name: "private address", req: SubscriptionRequest{URL: "https://10.0.0.1/"}, wantFields: []string{"url"}},
		{name: "unknown events", req: SubscriptionRequest{URL: "https://hooks.example.com/in", Events: []string{"post.failed", "post.exploded", " post.held", ""}},
			wantFields: []string{"events[1]", "events[2]", "events[3]"}},
		{name: "description too long", req: SubscriptionRequest{URL: "https://hooks.example.com/in", Description: strings.Repeat("x", MaxDescriptionBytes+1)},
			wantFields: []string{"description"}},
		{name: "description not UTF-8", req: SubscriptionRequest{URL: "https://hooks.example.com/in", Description: "\xff"}, wantFields: []string{"description"}},
		{name: "everything wrong", req: SubscriptionRequest{URL: "ftp://x", Events: []string{"x"}, Description: "\xff"},
			wantFields: []string{"url", "events[0]", "description"}},
	}
	idPattern := regexp.MustCompile(`^wh_[a-z2-7]{10}$`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sub, err := NewSubscription(tc.req, now)
			var fields []string
			var joined interface{ Unwrap() []error }
			if err != nil && !errors.As(err, &joined) {
				t.Fatalf("error %v: want field errors, joined", err)
			}
			for _, e := range fieldList(joined) {
				var fe *post.FieldError
				if !errors.As(e, &fe) || fe.Problem == "" || fe.Fix == "" {
					t.Fatalf("error %v is not a field error with a problem and a fix", e)
				}
				fields = append(fields, fe.Field)
			}
			if diff := cmp.Diff(tc.wantFields, fields); diff != "" {
				t.Fatalf("refused fields (-want +got):\n%s", diff)
			}
			if err == nil && (!idPattern.MatchString(sub.ID) || !cmp.Equal(tc.wantEvents, sub.Events)) {
				t.Errorf("accepted as id %q, events %v; want wh_ and 10 base32 letters, events %v", sub.ID, sub.Events, tc.wantEvents)
			}
		})
	}
}

func fieldList(joined interface{ Unwrap() []error }) []error {
	if joined == nil {
		return nil
	}
	return joined.Unwrap()
}

// An accepted request gives a subscription with a fresh id and secret,
// its time in UTC, the request's other fields as given.
func TestNewSubscriptionAccepted(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	req := SubscriptionRequest{URL: "https://hooks.example.com/in", Events: []string{"post.failed", "post.held", "post.failed"}, Description: "the CMS"}
	a, err := NewSubscription(req, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSubscription(req, now)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^wh_[a-z2-7]{10}$`).MatchString(a.ID) || a.ID == b.ID {
		t.Errorf("ids %q and %q: want two different wh_ and 10 base32 letters", a.ID, b.ID)
	}
	if _, err := ParseSecret(a.Secret); err != nil || !strings.HasPrefix(a.Secret, SecretPrefix) || a.Secret == b.Secret {
		t.Errorf("secrets: want two different whsec_ secrets (%v)", err)
	}
	want := publishing.Subscription{ID: a.ID, Secret: a.Secret, URL: req.URL, Events: []publishing.EventType{publishing.EventFailed, publishing.EventHeld},
		Description: "the CMS", CreatedAt: now.UTC()}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("subscription (-want +got):\n%s", diff)
	}
	if a.CreatedAt.Location() != time.UTC {
		t.Errorf("created at %v, want UTC", a.CreatedAt)
	}
}
