package dynamostore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/credseal"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

// The outbox's subscription suite, unchanged, against dynalite: two
// Stores with one key on fresh tables, used in turn.
func TestSubscriptionsConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, WorkspaceTable)
	publishingtest.TestSubscriptions(t, func(t *testing.T) publishing.Subscriptions {
		prefix := next(t)
		key := NewStaticKey()
		return &subscriptionsPair{pair{a: e.store(t, prefix, nil, Options{Keys: key}), b: e.store(t, prefix, nil, Options{Keys: key})}}
	})
}

// subscriptionsPair alternates two Stores, call by call.
type subscriptionsPair struct{ pair }

func (p *subscriptionsPair) AddSubscription(ctx context.Context, s publishing.Subscription) error {
	return p.pick().AddSubscription(ctx, s)
}

func (p *subscriptionsPair) GetSubscription(ctx context.Context, id string) (publishing.Subscription, error) {
	return p.pick().GetSubscription(ctx, id)
}

func (p *subscriptionsPair) ListSubscriptions(ctx context.Context) ([]publishing.Subscription, error) {
	return p.pick().ListSubscriptions(ctx)
}

func (p *subscriptionsPair) RemoveSubscription(ctx context.Context, id string) error {
	return p.pick().RemoveSubscription(ctx, id)
}

func (p *subscriptionsPair) DisableSubscription(ctx context.Context, id, reason string) error {
	return p.pick().DisableSubscription(ctx, id, reason)
}

// Subscriptions round-trip, by id, with their secrets; an id is taken
// once; unknown ids are not found; disabling keeps the subscription and
// says why; removing deletes it.
func TestSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, WorkspaceTable)
	key := NewStaticKey()
	a := e.store(t, prefix, nil, Options{Keys: key})
	b := e.store(t, prefix, nil, Options{Keys: key}) // another process
	ctx := context.Background()

	if got, err := b.ListSubscriptions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListSubscriptions on an empty table = %v, %v", got, err)
	}
	w2 := publishing.Subscription{ID: "wh_2", URL: "https://two.example/hook", Secret: "whsec_dHdv", CreatedAt: t0,
		Events: []publishing.EventType{publishing.EventPublished, publishing.EventFailed}, Description: "cms"}
	w1 := publishing.Subscription{ID: "wh_1", URL: "http://127.0.0.1:9/h", Secret: "whsec_b25l", CreatedAt: t0, AllowPrivate: true}
	for _, s := range []publishing.Subscription{w2, w1} {
		if err := a.AddSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddSubscription(ctx, w1); !errors.Is(err, post.ErrConflict) {
		t.Errorf("AddSubscription of a taken id = %v, want post.ErrConflict", err)
	}
	got, err := b.ListSubscriptions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]publishing.Subscription{w1, w2}, got); diff != "" {
		t.Errorf("ListSubscriptions (-want +got):\n%s", diff)
	}
	one, err := b.GetSubscription(ctx, "wh_2")
	if err != nil || !cmp.Equal(w2, one) {
		t.Errorf("GetSubscription = %+v, %v; want %+v", one, err, w2)
	}
	if _, err := b.GetSubscription(ctx, "wh_none"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetSubscription(unknown) = %v, want post.ErrNotFound", err)
	}

	// Routing needs no key: a store without one lists them, secrets empty.
	keyless := e.store(t, prefix, nil, Options{})
	routes, err := keyless.ListSubscriptionsWithoutSecrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w1NoSecret, w2NoSecret := w1, w2
	w1NoSecret.Secret, w2NoSecret.Secret = "", ""
	if diff := cmp.Diff([]publishing.Subscription{w1NoSecret, w2NoSecret}, routes); diff != "" {
		t.Errorf("ListSubscriptionsWithoutSecrets (-want +got):\n%s", diff)
	}
	if _, err := keyless.ListSubscriptions(ctx); !errors.Is(err, ErrNoDataKeys) {
		t.Errorf("ListSubscriptions without a key = %v, want ErrNoDataKeys", err)
	}

	if err := a.DisableSubscription(ctx, "wh_2", "410 Gone"); err != nil {
		t.Fatal(err)
	}
	one, err = b.GetSubscription(ctx, "wh_2")
	if err != nil || !one.Disabled || one.DisabledReason != "410 Gone" || one.Wants(publishing.EventPublished) {
		t.Errorf("after DisableSubscription: %+v, %v", one, err)
	}
	if err := a.DisableSubscription(ctx, "wh_none", "x"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("DisableSubscription(unknown) = %v, want post.ErrNotFound", err)
	}
	if err := a.RemoveSubscription(ctx, "wh_2"); err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveSubscription(ctx, "wh_2"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("RemoveSubscription twice = %v, want post.ErrNotFound", err)
	}
	if got, err := b.ListSubscriptions(ctx); err != nil || len(got) != 1 || got[0].ID != "wh_1" {
		t.Errorf("after RemoveSubscription: %+v, %v", got, err)
	}
	for _, bad := range []publishing.Subscription{{URL: "https://x", Secret: "s"}, {ID: "wh_x", Secret: "s"}, {ID: "wh_x", URL: "https://x"}} {
		if err := a.AddSubscription(ctx, bad); err == nil {
			t.Errorf("AddSubscription(%+v) accepted", bad)
		}
	}
}

// The secret is sealed at rest: the stored item holds no plain secret,
// a sealed secret moved to another subscription does not open, and a
// store with another key cannot read it (the error names the key, never
// the secret).
func TestSubscriptionSecretSealed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, WorkspaceTable)
	key := NewStaticKey()
	s := e.store(t, prefix, nil, Options{Keys: key})
	ctx := context.Background()
	const secret = "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTMyLWJ5dGVzISE="
	if err := s.AddSubscription(ctx, publishing.Subscription{ID: "wh_a", URL: "https://a.example/", Secret: secret, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	raw, err := e.admin.GetItem(ctx, &dynamodb.GetItemInput{TableName: ptr(prefix + WorkspaceTable), Key: subscriptionKey("wh_a"), ConsistentRead: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	stored := sval(raw.Item, "secret")
	if !strings.HasPrefix(stored, credseal.Prefix) || strings.Contains(stored, "c2VjcmV0") {
		t.Errorf("stored secret %q, want a sealed value", stored)
	}
	for name, v := range raw.Item {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.Contains(s.Value, secret) {
			t.Errorf("attribute %s holds the plain secret", name)
		}
	}

	// Copied to another subscription, it does not open.
	moved := raw.Item
	moved[attrSK] = str("wh_b")
	if _, err := e.admin.PutItem(ctx, &dynamodb.PutItemInput{TableName: ptr(prefix + WorkspaceTable), Item: moved}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSubscription(ctx, "wh_b"); !errors.Is(err, credseal.ErrUndecryptable) {
		t.Errorf("a secret copied to another subscription opened: %v", err)
	}
	other := e.store(t, prefix, nil, Options{Keys: NewStaticKey()})
	_, err = other.GetSubscription(ctx, "wh_a")
	if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), stored) {
		t.Errorf("GetSubscription with another key = %v, want an error without the secret", err)
	}
}
