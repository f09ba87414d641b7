package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/credseal"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Workspace and credentials table attributes the code names.
const (
	attrPK         = "pk"
	attrSK         = "sk"
	attrAccount    = "account"
	attrLeaseOwner = "lease_owner"
	attrLeaseUntil = "lease_until"
	attrLostAt     = "refresh_lost_at"
	attrExpiresAt  = "expires_at"
	attrUpdatedAt  = "updated_at"
)

// Partitions of the workspace table.
const (
	pkAccount = "account"
	pkBlocked = "blocked"
	pkConfig  = "config"
)

// ErrNoAccessToken is returned (wrapped) when a credential without an
// access token is stored.
var ErrNoAccessToken = errors.New("credential has no access token")

// accountItem is an account as stored in the workspace table's "account"
// partition, sorted by id.
type accountItem struct {
	PK            string `dynamodbav:"pk"`
	ID            string `dynamodbav:"sk"`
	Platform      string `dynamodbav:"platform,omitempty"`
	Handle        string `dynamodbav:"handle,omitempty"`
	BaseURL       string `dynamodbav:"base_url,omitempty"`
	RemoteID      string `dynamodbav:"remote_id,omitempty"`
	CredentialRef string `dynamodbav:"credential_ref,omitempty"`
	Gate          string `dynamodbav:"gate,omitempty"`
	Status        string `dynamodbav:"status,omitempty"`
	StatusReason  string `dynamodbav:"status_reason,omitempty"`
	MaxCharacters int    `dynamodbav:"max_characters,omitempty"`
	MaxMedia      int    `dynamodbav:"max_media,omitempty"`
	MaxMediaBytes int64  `dynamodbav:"max_media_bytes,omitempty"`
	// TimeZone, Slots and RequireApproval are post.Account's.
	TimeZone        string   `dynamodbav:"time_zone,omitempty"`
	Slots           []string `dynamodbav:"slots,omitempty"`
	RequireApproval bool     `dynamodbav:"require_approval,omitempty"`
	// UpdatedAt is when PutAccount last wrote the account (the store's
	// clock): the time of an account.reconnect_needed event derived from
	// the change stream (AccountChange).
	UpdatedAt string `dynamodbav:"updated_at,omitempty"`
}

func (it accountItem) account() post.Account {
	return post.Account{
		ID: post.AccountID(it.ID), Platform: it.Platform, Handle: it.Handle, BaseURL: it.BaseURL, RemoteID: it.RemoteID,
		CredentialRef: it.CredentialRef, Gate: post.GatePolicy(it.Gate), Status: post.AccountStatus(it.Status),
		StatusReason: it.StatusReason,
		Limits:       post.Limits{MaxTextGraphemes: it.MaxCharacters, MaxMedia: it.MaxMedia, MaxMediaBytes: it.MaxMediaBytes},
		TimeZone:     it.TimeZone, Slots: it.Slots, RequireApproval: it.RequireApproval,
	}
}

func accountKey(id post.AccountID) item { return item{attrPK: str(pkAccount), attrSK: str(string(id))} }

// PutAccount stores an account with its limits (one PutItem), replacing
// one with the same id, and the time it did (updated_at, which events
// derived from the change stream carry). Its credential, stored apart, is
// untouched.
func (s *Store) PutAccount(ctx context.Context, a post.Account) error {
	it, err := attributevalue.MarshalMap(accountItem{
		PK: pkAccount, ID: string(a.ID), Platform: a.Platform, Handle: a.Handle, BaseURL: a.BaseURL,
		RemoteID: a.RemoteID, CredentialRef: a.CredentialRef, Gate: string(a.Gate), Status: string(a.Status),
		StatusReason: a.StatusReason, MaxCharacters: a.Limits.MaxTextGraphemes, MaxMedia: a.Limits.MaxMedia,
		MaxMediaBytes: a.Limits.MaxMediaBytes, TimeZone: a.TimeZone, Slots: a.Slots, RequireApproval: a.RequireApproval,
		UpdatedAt: encTime(s.now()),
	})
	if err == nil {
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.tables.workspace, Item: it})
	}
	if err != nil {
		return fmt.Errorf("put account %s: %w", a.ID, err)
	}
	return nil
}

// GetAccount reads an account (one consistent GetItem) or returns an
// error wrapping post.ErrNotFound.
func (s *Store) GetAccount(ctx context.Context, id post.AccountID) (post.Account, error) {
	raw, err := s.getItem(ctx, s.tables.workspace, accountKey(id))
	if err != nil {
		return post.Account{}, fmt.Errorf("get account %s: %w", id, err)
	}
	if raw == nil {
		return post.Account{}, fmt.Errorf("get account %s: %w", id, post.ErrNotFound)
	}
	var it accountItem
	if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
		return post.Account{}, fmt.Errorf("get account %s: %w", id, err)
	}
	return it.account(), nil
}

// ListAccounts lists all accounts ordered by id: one consistent Query of
// the workspace table's account partition.
func (s *Store) ListAccounts(ctx context.Context) ([]post.Account, error) {
	items, err := s.queryPartition(ctx, pkAccount)
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	var out []post.Account
	for _, raw := range items {
		var it accountItem
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			return nil, fmt.Errorf("list accounts: account %s: %w", sval(raw, attrSK), err)
		}
		out = append(out, it.account())
	}
	return out, nil
}

// queryPartition reads one partition of the workspace table, in sort-key
// order, with strongly consistent reads.
func (s *Store) queryPartition(ctx context.Context, pk string) ([]item, error) {
	var x expr
	cond := fmt.Sprintf("%s = %s", x.name(attrPK), x.str(pk))
	in := &dynamodb.QueryInput{
		TableName: &s.tables.workspace, KeyConditionExpression: &cond, ConsistentRead: ptr(true),
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	}
	var out []item
	for {
		res, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// DeleteAccount removes an account, then its credential (with any refresh
// lease), or returns an error wrapping post.ErrNotFound when there is no
// such account. Posts and ledger entries are untouched. A crash between
// the two deletes leaves a credential without its account, sealed and
// unused; deleting the account again removes it.
func (s *Store) DeleteAccount(ctx context.Context, id post.AccountID) error {
	var x expr
	cond := fmt.Sprintf("attribute_exists(%s)", x.name(attrPK))
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.tables.workspace, Key: accountKey(id), ConditionExpression: &cond, ExpressionAttributeNames: x.names,
	})
	if _, ok := conditionFailed(err); ok {
		err = post.ErrNotFound
		// A credential left by an earlier crash goes too.
	}
	if _, derr := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.tables.credentials, Key: credentialKey(id)}); err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("delete account %s: %w", id, err)
	}
	return nil
}

// credentialItem is an account's credential in the credentials table: the
// token fields sealed (credseal: AES-256-GCM with the data key, the
// account and field as additional data), times in the clear, and the
// refresh lease.
type credentialItem struct {
	Account       string `dynamodbav:"account"`
	AccessToken   string `dynamodbav:"access_token,omitempty"`
	RefreshToken  string `dynamodbav:"refresh_token,omitempty"`
	ClientID      string `dynamodbav:"client_id,omitempty"`
	ClientSecret  string `dynamodbav:"client_secret,omitempty"`
	ExpiresAt     string `dynamodbav:"expires_at,omitempty"`
	RefreshLostAt string `dynamodbav:"refresh_lost_at,omitempty"`
	LeaseOwner    string `dynamodbav:"lease_owner,omitempty"`
	LeaseUntil    string `dynamodbav:"lease_until,omitempty"`
}

func credentialKey(id post.AccountID) item { return item{attrAccount: str(string(id))} }

// Credential reads an account's credential (one consistent GetItem) and
// opens its sealed values, or returns an error wrapping post.ErrNotFound.
// The first credential read or write of a process unwraps the data key
// (one GetItem and one DataKeys.OpenDataKey: KMS Decrypt); later ones make
// no other call. A value that does not open gives an error wrapping
// credseal.ErrUndecryptable that names the account, the field and the key,
// never a value.
func (s *Store) Credential(ctx context.Context, id post.AccountID) (platform.Credential, error) {
	raw, err := s.getItem(ctx, s.tables.credentials, credentialKey(id))
	if err != nil {
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, err)
	}
	var it credentialItem
	if raw != nil {
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			return platform.Credential{}, fmt.Errorf("credential %s: %w", id, err)
		}
	}
	if it.AccessToken == "" { // none, or only a refresh lease
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, post.ErrNotFound)
	}
	seal, err := s.sealer(ctx, false)
	if errors.Is(err, errNoDataKey) {
		return platform.Credential{}, fmt.Errorf("credential %s is stored sealed, but the workspace table holds no data key to open it (was it deleted?): %w",
			id, credseal.ErrUndecryptable)
	}
	if err != nil {
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, err)
	}
	var c platform.Credential
	for _, v := range []struct {
		dst          *string
		field, value string
	}{
		{&c.AccessToken, credseal.AccessToken, it.AccessToken},
		{&c.RefreshToken, credseal.RefreshToken, it.RefreshToken},
		{&c.ClientID, credseal.ClientID, it.ClientID},
		{&c.ClientSecret, credseal.ClientSecret, it.ClientSecret},
	} {
		plain, err := seal.Open(string(id), v.field, v.value)
		if errors.Is(err, credseal.ErrNotSealed) {
			return platform.Credential{}, fmt.Errorf("credential %s: %s is not an encrypted value (written by another program?): %w", id, v.field, err)
		}
		if err != nil {
			return platform.Credential{}, fmt.Errorf("credential %s: %s does not decrypt with the data key wrapped by %s (was the data key replaced, or the value copied from another account or field?): %w",
				id, v.field, s.keys.Name(), err)
		}
		*v.dst = plain
	}
	var d decoder
	c.ExpiresAt, c.RefreshLostAt = d.time(attrExpiresAt, it.ExpiresAt), d.time(attrLostAt, it.RefreshLostAt)
	if d.err != nil {
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, d.err)
	}
	return c, nil
}

// setTokens adds c's sealed values to an update: the access token, the
// refresh token unless empty (the stored one is kept), the expiry and the
// client (removed when empty), and clears a lost refresh.
func setTokens(x *expr, u *update, seal *credseal.Sealer, id post.AccountID, c platform.Credential) {
	u.set(x, credseal.AccessToken, str(seal.Seal(string(id), credseal.AccessToken, c.AccessToken)))
	if c.RefreshToken != "" {
		u.set(x, credseal.RefreshToken, str(seal.Seal(string(id), credseal.RefreshToken, c.RefreshToken)))
	}
	u.setOrRemove(x, credseal.ClientID, seal.Seal(string(id), credseal.ClientID, c.ClientID))
	u.setOrRemove(x, credseal.ClientSecret, seal.Seal(string(id), credseal.ClientSecret, c.ClientSecret))
	u.setOrRemove(x, attrExpiresAt, encTime(c.ExpiresAt))
	u.remove(x, attrLostAt)
}

// PutCredential stores an account's credential (an operator connected
// the account), sealed, with one UpdateItem that creates the item if
// needed. An empty access token is refused (ErrNoAccessToken); an empty
// refresh token keeps the stored one; the client id and secret are stored
// as given; a lost refresh recorded by MarkRefreshLost is cleared. A
// refresh lease, if any, is untouched. The first credential ever stored
// makes the data key (DataKeys.NewDataKey: KMS GenerateDataKey).
func (s *Store) PutCredential(ctx context.Context, id post.AccountID, c platform.Credential) error {
	if c.AccessToken == "" {
		return fmt.Errorf("put credential %s: %w", id, ErrNoAccessToken)
	}
	seal, err := s.sealer(ctx, true)
	if err != nil {
		return fmt.Errorf("put credential %s: %w", id, err)
	}
	var x expr
	var u update
	setTokens(&x, &u, seal, id, c)
	expression := u.String()
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.credentials, Key: credentialKey(id), UpdateExpression: &expression,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if err != nil {
		return fmt.Errorf("put credential %s: %w", id, err)
	}
	return nil
}

// LeaseRefresh takes the account's refresh lease for owner until the
// given time if nobody holds it, owner already holds it, or it expired at
// now (lease_until ≤ now), with one conditional UpdateItem; an error
// wrapping post.ErrConflict otherwise. Like sqlitestore it may lease an
// account that has no credential yet.
func (s *Store) LeaseRefresh(ctx context.Context, id post.AccountID, owner string, now, until time.Time) error {
	if owner == "" {
		return fmt.Errorf("lease refresh %s: empty owner", id)
	}
	var x expr
	var u update
	u.set(&x, attrLeaseOwner, str(owner))
	u.set(&x, attrLeaseUntil, str(sortTime(until)))
	o, lu := x.name(attrLeaseOwner), x.name(attrLeaseUntil)
	cond := fmt.Sprintf("attribute_not_exists(%s) OR %s = %s OR %s <= %s", o, o, x.str(owner), lu, x.str(sortTime(now)))
	err := s.credentialUpdate(ctx, id, &x, &u, cond)
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("lease refresh %s for %s: held by another owner: %w", id, owner, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("lease refresh %s: %w", id, err)
	}
	return nil
}

// SaveRefreshed stores a refreshed credential, sealed, and drops the
// lease, only if owner still holds it (one conditional UpdateItem); an
// error wrapping post.ErrConflict otherwise. An empty refresh token keeps
// the stored one; the client id and secret are stored as given; a lost
// refresh recorded by MarkRefreshLost is cleared. A nil credential only
// drops the lease; a credential without an access token is refused
// (ErrNoAccessToken) and the lease kept.
func (s *Store) SaveRefreshed(ctx context.Context, id post.AccountID, owner string, c *platform.Credential) error {
	if owner == "" {
		return fmt.Errorf("save refreshed %s: empty owner", id)
	}
	var x expr
	var u update
	if c != nil {
		if c.AccessToken == "" {
			return fmt.Errorf("save refreshed %s: %w", id, ErrNoAccessToken)
		}
		seal, err := s.sealer(ctx, true)
		if err != nil {
			return fmt.Errorf("save refreshed %s: %w", id, err)
		}
		setTokens(&x, &u, seal, id, *c)
	}
	u.remove(&x, attrLeaseOwner)
	u.remove(&x, attrLeaseUntil)
	cond := fmt.Sprintf("%s = %s", x.name(attrLeaseOwner), x.str(owner))
	err := s.credentialUpdate(ctx, id, &x, &u, cond)
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("save refreshed %s: lease not held by %s: %w", id, owner, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("save refreshed %s: %w", id, err)
	}
	return nil
}

// MarkRefreshLost records that a refresh with the stored refresh token
// was sent and its answer lost (Credential's RefreshLostAt = at) and drops
// the lease, only if owner still holds it (one conditional UpdateItem); an
// error wrapping post.ErrConflict otherwise. The tokens are kept.
func (s *Store) MarkRefreshLost(ctx context.Context, id post.AccountID, owner string, at time.Time) error {
	if owner == "" {
		return fmt.Errorf("mark refresh lost %s: empty owner", id)
	}
	if at.IsZero() {
		return fmt.Errorf("mark refresh lost %s: zero time", id)
	}
	var x expr
	var u update
	u.set(&x, attrLostAt, str(encTime(at)))
	u.remove(&x, attrLeaseOwner)
	u.remove(&x, attrLeaseUntil)
	cond := fmt.Sprintf("%s = %s", x.name(attrLeaseOwner), x.str(owner))
	err := s.credentialUpdate(ctx, id, &x, &u, cond)
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("mark refresh lost %s: lease not held by %s: %w", id, owner, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("mark refresh lost %s: %w", id, err)
	}
	return nil
}

// credentialUpdate runs one conditional UpdateItem on a credential.
func (s *Store) credentialUpdate(ctx context.Context, id post.AccountID, x *expr, u *update, cond string) error {
	expression := u.String()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.credentials, Key: credentialKey(id), UpdateExpression: &expression,
		ConditionExpression: &cond, ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	return err
}

// SetAccountSettings writes the settings c names (zone, posting slots,
// approval flag) alone, in one UpdateItem on attribute_exists: the
// others, the status, the limits and the credential stay.
func (s *Store) SetAccountSettings(ctx context.Context, id post.AccountID, c publishing.AccountChange) error {
	var x expr
	var u update
	if c.TimeZone != nil {
		u.setOrRemove(&x, "time_zone", *c.TimeZone)
	}
	if c.Slots != nil {
		if len(*c.Slots) > 0 {
			slots, err := attributevalue.Marshal(*c.Slots)
			if err != nil {
				return fmt.Errorf("set account %s: %w", id, err)
			}
			u.set(&x, "slots", slots)
		} else {
			u.remove(&x, "slots")
		}
	}
	if c.RequireApproval != nil {
		if *c.RequireApproval {
			u.set(&x, "require_approval", &types.AttributeValueMemberBOOL{Value: true})
		} else {
			u.remove(&x, "require_approval")
		}
	}
	u.set(&x, attrUpdatedAt, str(encTime(s.now())))
	expression := u.String()
	cond := fmt.Sprintf("attribute_exists(%s)", x.name(attrPK))
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.workspace, Key: accountKey(id), UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if _, failed := conditionFailed(err); failed {
		return fmt.Errorf("set account %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("set account %s: %w", id, err)
	}
	return nil
}
