package main

import (
	"context"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The embedded runtime paces sends to a platform's posting limits through
// its store, as the AWS runtime does (functions/pipeline
// TestPublisherPacesOnAWS): of two posts due at once on a platform that
// takes one a minute, one is sent and the other waits, nothing of it
// written or sent.
func TestRuntimePacesSends(t *testing.T) {
	f := newFlowFixtureWith(t, post.GateAuto, false, func(p ports) ports {
		p.platforms = limitedPlatforms{p.platforms}
		return p
	})
	first, second := f.due("first", "First of two."), f.due("second", "Second of two.")
	if out := f.publish(first); out.Result != publishing.Published {
		t.Fatalf("first = %+v, want published", out)
	}
	out := f.publish(second)
	if out.Result != publishing.Retry || out.Reason != publishing.ReasonPaced {
		t.Fatalf("second = %+v, want retry %s", out, publishing.ReasonPaced)
	}
	if n := f.ws.sb.Stats().CreateRequests; n != 1 {
		t.Errorf("%d creates sent, want 1", n)
	}
}

// limitedPlatforms declares a posting limit of one post a minute on every
// client.
type limitedPlatforms struct{ publishing.Platforms }

func (l limitedPlatforms) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := l.Platforms.Client(ctx, a, c)
	return limitedClient{cl}, err
}

type limitedClient struct{ platform.Client }

func (l limitedClient) Capabilities() platform.Capabilities {
	c := l.Client.Capabilities()
	c.PostingLimits = []platform.Rate{{Count: 1, Per: time.Minute}}
	return c
}
