package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/credseal"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

var _ publishing.Subscriptions = (*Store)(nil)

// pkWebhook is the workspace table's partition of webhook subscriptions,
// sorted by id.
const pkWebhook = "webhook"

// WebhookPartition is the partition key of every webhook subscription in
// the workspace table (what an IAM dynamodb:LeadingKeys condition names
// to let a role write subscriptions only).
const WebhookPartition = pkWebhook

// sealedSecretField is the credseal field name of a subscription's
// signing secret (the subscription id stands where an account id stands
// for credentials), so a sealed secret copied to another subscription, or
// to a credential field, does not open.
const sealedSecretField = "webhook_secret"

// subscriptionItem is a webhook subscription as stored: the secret sealed
// with the credentials' data key (credseal), everything else in the clear.
type subscriptionItem struct {
	PK             string   `dynamodbav:"pk"`
	ID             string   `dynamodbav:"sk"`
	URL            string   `dynamodbav:"url"`
	Events         []string `dynamodbav:"events,omitempty"`
	Secret         string   `dynamodbav:"secret"`
	AllowPrivate   bool     `dynamodbav:"allow_private,omitempty"`
	Description    string   `dynamodbav:"description,omitempty"`
	CreatedAt      string   `dynamodbav:"created_at,omitempty"`
	Disabled       bool     `dynamodbav:"disabled,omitempty"`
	DisabledReason string   `dynamodbav:"disabled_reason,omitempty"`
}

func subscriptionKey(id string) item { return item{attrPK: str(pkWebhook), attrSK: str(id)} }

// subscription is the item's subscription, its secret left sealed.
func (it subscriptionItem) subscription() (publishing.Subscription, error) {
	var d decoder
	s := publishing.Subscription{
		ID: it.ID, URL: it.URL, AllowPrivate: it.AllowPrivate, Description: it.Description,
		CreatedAt: d.time("created_at", it.CreatedAt), Disabled: it.Disabled, DisabledReason: it.DisabledReason,
	}
	for _, e := range it.Events {
		s.Events = append(s.Events, publishing.EventType(e))
	}
	return s, d.err
}

// decodeSubscription reads a stored subscription; with seal, its secret
// is opened, without it left empty.
func (s *Store) decodeSubscription(raw item, seal *credseal.Sealer) (publishing.Subscription, error) {
	var it subscriptionItem
	if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
		return publishing.Subscription{}, fmt.Errorf("subscription %s: %w", sval(raw, attrSK), err)
	}
	sub, err := it.subscription()
	if err != nil {
		return publishing.Subscription{}, fmt.Errorf("subscription %s: %w", it.ID, err)
	}
	if seal == nil {
		return sub, nil
	}
	sub.Secret, err = seal.Open(it.ID, sealedSecretField, it.Secret)
	if errors.Is(err, credseal.ErrNotSealed) {
		return publishing.Subscription{}, fmt.Errorf("subscription %s: its secret is not an encrypted value (written by another program?): %w", it.ID, err)
	}
	if err != nil {
		return publishing.Subscription{}, fmt.Errorf("subscription %s: its secret does not decrypt with the data key wrapped by %s (was the data key replaced, or the value copied from another subscription?): %w",
			it.ID, s.keys.Name(), err)
	}
	return sub, nil
}

// openSealer is the sealer for reading secrets: like the credentials',
// with an error saying what is missing when no data key is stored.
func (s *Store) openSealer(ctx context.Context, what string) (*credseal.Sealer, error) {
	seal, err := s.sealer(ctx, false)
	if errors.Is(err, errNoDataKey) {
		return nil, fmt.Errorf("%s: secrets are stored sealed, but the workspace table holds no data key to open them (was it deleted?): %w", what, credseal.ErrUndecryptable)
	}
	return seal, err
}

// AddSubscription stores a subscription, its secret sealed (one
// conditional PutItem; the first secret or credential ever stored also
// makes the data key), or returns an error wrapping post.ErrConflict if
// the id exists. The id, URL and secret must not be empty, and every
// event type one of publishing.EventTypes.
func (s *Store) AddSubscription(ctx context.Context, sub publishing.Subscription) error {
	switch {
	case sub.ID == "":
		return errors.New("add subscription: empty id")
	case sub.URL == "":
		return fmt.Errorf("add subscription %s: empty url", sub.ID)
	case sub.Secret == "":
		return fmt.Errorf("add subscription %s: empty secret", sub.ID)
	}
	for _, e := range sub.Events {
		if !publishing.ValidEventType(e) {
			return fmt.Errorf("add subscription %s: events: %q is not an event type", sub.ID, e)
		}
	}
	seal, err := s.sealer(ctx, true)
	if err != nil {
		return fmt.Errorf("add subscription %s: %w", sub.ID, err)
	}
	it := subscriptionItem{
		PK: pkWebhook, ID: sub.ID, URL: sub.URL, Secret: seal.Seal(sub.ID, sealedSecretField, sub.Secret),
		AllowPrivate: sub.AllowPrivate, Description: sub.Description, CreatedAt: encTime(sub.CreatedAt),
		Disabled: sub.Disabled, DisabledReason: sub.DisabledReason,
	}
	for _, e := range sub.Events {
		it.Events = append(it.Events, string(e))
	}
	raw, err := attributevalue.MarshalMap(it)
	if err != nil {
		return fmt.Errorf("add subscription %s: %w", sub.ID, err)
	}
	var x expr
	cond := fmt.Sprintf("attribute_not_exists(%s)", x.name(attrPK))
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.tables.workspace, Item: raw, ConditionExpression: &cond, ExpressionAttributeNames: x.names,
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("add subscription %s: the id exists: %w", sub.ID, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("add subscription %s: %w", sub.ID, err)
	}
	return nil
}

// GetSubscription reads a subscription with its secret opened (one
// consistent GetItem; the process's first secret or credential read also
// unwraps the data key), or returns an error wrapping post.ErrNotFound.
func (s *Store) GetSubscription(ctx context.Context, id string) (publishing.Subscription, error) {
	raw, err := s.getItem(ctx, s.tables.workspace, subscriptionKey(id))
	if err != nil {
		return publishing.Subscription{}, fmt.Errorf("get subscription %s: %w", id, err)
	}
	if raw == nil {
		return publishing.Subscription{}, fmt.Errorf("get subscription %s: %w", id, post.ErrNotFound)
	}
	seal, err := s.openSealer(ctx, "get subscription "+id)
	if err != nil {
		return publishing.Subscription{}, err
	}
	sub, err := s.decodeSubscription(raw, seal)
	if err != nil {
		return publishing.Subscription{}, fmt.Errorf("get subscription: %w", err)
	}
	return sub, nil
}

// ListSubscriptions lists every subscription, by id, with its secret
// opened: one consistent Query of the workspace table's webhook partition.
func (s *Store) ListSubscriptions(ctx context.Context) ([]publishing.Subscription, error) {
	return s.listSubscriptions(ctx, true)
}

// ListSubscriptionsWithoutSecrets lists every subscription, by id, its
// Secret left empty: what routing events needs (the notifier), with no
// access to the data key.
func (s *Store) ListSubscriptionsWithoutSecrets(ctx context.Context) ([]publishing.Subscription, error) {
	return s.listSubscriptions(ctx, false)
}

func (s *Store) listSubscriptions(ctx context.Context, secrets bool) ([]publishing.Subscription, error) {
	items, err := s.queryPartition(ctx, pkWebhook)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	var seal *credseal.Sealer
	if secrets && len(items) > 0 {
		if seal, err = s.openSealer(ctx, "list subscriptions"); err != nil {
			return nil, err
		}
	}
	out := make([]publishing.Subscription, 0, len(items))
	for _, raw := range items {
		sub, err := s.decodeSubscription(raw, seal)
		if err != nil {
			return nil, fmt.Errorf("list subscriptions: %w", err)
		}
		out = append(out, sub)
	}
	return out, nil
}

// RemoveSubscription deletes a subscription (one conditional DeleteItem),
// or returns an error wrapping post.ErrNotFound. Its deliveries still
// queued on AWS (messages of the webhook queue) are dropped by the
// webhooks function when it finds the subscription gone.
func (s *Store) RemoveSubscription(ctx context.Context, id string) error {
	var x expr
	cond := fmt.Sprintf("attribute_exists(%s)", x.name(attrPK))
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.tables.workspace, Key: subscriptionKey(id), ConditionExpression: &cond, ExpressionAttributeNames: x.names,
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("remove subscription %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("remove subscription %s: %w", id, err)
	}
	return nil
}

// DisableSubscription marks a subscription disabled with the reason (one
// conditional UpdateItem), or returns an error wrapping post.ErrNotFound.
func (s *Store) DisableSubscription(ctx context.Context, id, reason string) error {
	var x expr
	var u update
	u.set(&x, "disabled", boolValue(true))
	u.setOrRemove(&x, "disabled_reason", reason)
	expression := u.String()
	cond := fmt.Sprintf("attribute_exists(%s)", x.name(attrPK))
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.workspace, Key: subscriptionKey(id), UpdateExpression: &expression,
		ConditionExpression: &cond, ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("disable subscription %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("disable subscription %s: %w", id, err)
	}
	return nil
}

// boolValue is a BOOL attribute value.
func boolValue(b bool) *types.AttributeValueMemberBOOL {
	return &types.AttributeValueMemberBOOL{Value: b}
}
