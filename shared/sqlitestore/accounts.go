package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// ErrNoAccessToken is returned (wrapped) when a credential without an access
// token is stored.
var ErrNoAccessToken = errors.New("credential has no access token")

// PutAccount stores an account with its limits, replacing one with the
// same id, and records the event its status change causes, if any
// (publishing.AccountEvent at the store's clock; see the outbox), in one
// transaction. Its credential, stored apart, is untouched.
func (s *Store) PutAccount(ctx context.Context, a post.Account) error {
	var slots []byte
	if len(a.Slots) > 0 {
		var err error
		if slots, err = json.Marshal(a.Slots); err != nil {
			return fmt.Errorf("put account %s: encode slots: %w", a.ID, err)
		}
	}
	err := s.writeChange(ctx, func(tx *sql.Tx, record recordFunc) error {
		var prev post.Account
		var status string
		switch err := tx.StmtContext(ctx, s.ws.accountStatus).QueryRowContext(ctx, string(a.ID)).Scan(&status); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		}
		prev.Status = post.AccountStatus(status)
		if _, err := tx.StmtContext(ctx, s.ws.accountPut).ExecContext(ctx, string(a.ID), a.Platform, a.Handle, a.BaseURL,
			a.RemoteID, a.CredentialRef, string(a.Gate), string(a.Status), a.StatusReason,
			a.Limits.MaxTextGraphemes, a.Limits.MaxMedia, a.Limits.MaxMediaBytes,
			a.TimeZone, string(slots), a.RequireApproval); err != nil {
			return err
		}
		return record(publishing.AccountEvent(prev, a, s.now()))
	})
	if err != nil {
		return fmt.Errorf("put account %s: %w", a.ID, err)
	}
	s.accountWrites.Add(1)
	return nil
}

// GetAccount reads an account or returns an error wrapping post.ErrNotFound.
func (s *Store) GetAccount(ctx context.Context, id post.AccountID) (post.Account, error) {
	a, err := scanAccount(s.rs.accountGet.QueryRowContext(ctx, string(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return post.Account{}, fmt.Errorf("get account %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return post.Account{}, fmt.Errorf("get account %s: %w", id, err)
	}
	return a, nil
}

// ListAccounts lists all accounts ordered by id.
func (s *Store) ListAccounts(ctx context.Context) ([]post.Account, error) {
	rows, err := s.rs.accountList.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	defer rows.Close()
	var out []post.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, fmt.Errorf("list accounts: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	return out, nil
}

func scanAccount(sc scanner) (post.Account, error) {
	var a post.Account
	var id, gate, status, slots string
	if err := sc.Scan(&id, &a.Platform, &a.Handle, &a.BaseURL, &a.RemoteID, &a.CredentialRef, &gate,
		&status, &a.StatusReason, &a.Limits.MaxTextGraphemes, &a.Limits.MaxMedia, &a.Limits.MaxMediaBytes,
		&a.TimeZone, &slots, &a.RequireApproval); err != nil {
		return post.Account{}, err
	}
	if slots != "" {
		if err := json.Unmarshal([]byte(slots), &a.Slots); err != nil {
			return post.Account{}, fmt.Errorf("account %s: decode slots: %w", id, err)
		}
	}
	a.ID, a.Gate, a.Status = post.AccountID(id), post.GatePolicy(gate), post.AccountStatus(status)
	return a, nil
}

// DeleteAccount removes an account and its credential (with any refresh
// lease) in one transaction, or returns an error wrapping post.ErrNotFound
// when there is no such account (a credential row without its account is
// then left as it is). Posts targeting the account and ledger entries are
// untouched.
func (s *Store) DeleteAccount(ctx context.Context, id post.AccountID) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.StmtContext(ctx, s.ws.credentialDelete).ExecContext(ctx, string(id)); err != nil {
			return err
		}
		res, err := tx.StmtContext(ctx, s.ws.accountDelete).ExecContext(ctx, string(id))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return post.ErrNotFound // rolls the credential's deletion back
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete account %s: %w", id, err)
	}
	s.accountWrites.Add(1)
	return nil
}

// Credential reads an account's credential, with the time its last refresh
// was lost if MarkRefreshLost recorded one, or returns an error wrapping
// post.ErrNotFound. The stored values are decrypted; one that does not
// decrypt (the key file was replaced, or the value was copied from another
// account or column) gives an error wrapping ErrCredentialUndecryptable
// that names the account and the key file. Tokens never appear in errors.
func (s *Store) Credential(ctx context.Context, id post.AccountID) (platform.Credential, error) {
	var c platform.Credential
	var access, refresh, clientID, clientSecret, expires, lost string
	err := s.rs.credential.QueryRowContext(ctx, string(id)).Scan(&access, &refresh, &expires, &lost, &clientID, &clientSecret)
	if errors.Is(err, sql.ErrNoRows) {
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, err)
	}
	for _, v := range []struct {
		dst           *string
		column, value string
	}{
		{&c.AccessToken, colAccessToken, access},
		{&c.RefreshToken, colRefreshToken, refresh},
		{&c.ClientID, colClientID, clientID},
		{&c.ClientSecret, colClientSecret, clientSecret},
	} {
		if *v.dst, err = s.seal.open(id, v.column, v.value); err != nil {
			return platform.Credential{}, err
		}
	}
	var d decoder
	c.ExpiresAt, c.RefreshLostAt = d.time(expires), d.time(lost)
	if d.err != nil {
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, d.err)
	}
	return c, nil
}

// PutCredential stores an account's credential (an operator connected the
// account), its values encrypted. An empty access token is refused
// (ErrNoAccessToken); an empty refresh token keeps the stored one; the
// client id and secret are stored as given (empty: the deployment's
// default app). A lost refresh recorded by MarkRefreshLost is cleared
// (c.RefreshLostAt is not stored: only MarkRefreshLost sets it). A refresh
// lease, if any, is untouched.
func (s *Store) PutCredential(ctx context.Context, id post.AccountID, c platform.Credential) error {
	if c.AccessToken == "" {
		return fmt.Errorf("put credential %s: %w", id, ErrNoAccessToken)
	}
	_, err := s.ws.credentialPut.ExecContext(ctx, string(id), s.seal.seal(id, colAccessToken, c.AccessToken),
		s.seal.seal(id, colRefreshToken, c.RefreshToken), sqltime.Encode(c.ExpiresAt),
		s.seal.seal(id, colClientID, c.ClientID), s.seal.seal(id, colClientSecret, c.ClientSecret))
	if err != nil {
		return fmt.Errorf("put credential %s: %w", id, err)
	}
	s.accountWrites.Add(1)
	return nil
}

// LeaseRefresh takes the account's refresh lease for owner until the given
// time if nobody holds it, owner already holds it, or it expired at now
// (lease_until ≤ now); an error wrapping post.ErrConflict otherwise. It is
// one conditional statement, atomic across processes.
func (s *Store) LeaseRefresh(ctx context.Context, id post.AccountID, owner string, now, until time.Time) error {
	if owner == "" {
		return fmt.Errorf("lease refresh %s: empty owner", id)
	}
	res, err := s.ws.leaseTake.ExecContext(ctx, string(id), owner, sqltime.Encode(until), sqltime.Encode(now))
	if err != nil {
		return fmt.Errorf("lease refresh %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("lease refresh %s: %w", id, err)
	}
	if n != 1 {
		return fmt.Errorf("lease refresh %s for %s: held by another owner: %w", id, owner, post.ErrConflict)
	}
	s.accountWrites.Add(1)
	return nil
}

// SaveRefreshed stores a refreshed credential, its values encrypted, and
// drops the lease, only if owner still holds it; an error wrapping
// post.ErrConflict otherwise. An empty refresh token keeps the stored one;
// the client id and secret are stored as given; a lost refresh recorded by
// MarkRefreshLost is cleared (c.RefreshLostAt is not stored). A nil
// credential only drops the lease; a credential without an access token is
// refused (ErrNoAccessToken) and the lease kept.
func (s *Store) SaveRefreshed(ctx context.Context, id post.AccountID, owner string, c *platform.Credential) error {
	if owner == "" {
		return fmt.Errorf("save refreshed %s: empty owner", id)
	}
	var res sql.Result
	var err error
	switch {
	case c == nil:
		res, err = s.ws.leaseRelease.ExecContext(ctx, string(id), owner)
	case c.AccessToken == "":
		return fmt.Errorf("save refreshed %s: %w", id, ErrNoAccessToken)
	default:
		res, err = s.ws.credentialSave.ExecContext(ctx, s.seal.seal(id, colAccessToken, c.AccessToken),
			s.seal.seal(id, colRefreshToken, c.RefreshToken), sqltime.Encode(c.ExpiresAt), string(id), owner,
			s.seal.seal(id, colClientID, c.ClientID), s.seal.seal(id, colClientSecret, c.ClientSecret))
	}
	if err != nil {
		return fmt.Errorf("save refreshed %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("save refreshed %s: %w", id, err)
	}
	if n != 1 {
		return fmt.Errorf("save refreshed %s: lease not held by %s: %w", id, owner, post.ErrConflict)
	}
	s.accountWrites.Add(1)
	return nil
}

// MarkRefreshLost records that a refresh with the stored refresh token was
// sent and its answer lost (Credential's RefreshLostAt = at) and drops the
// lease, only if owner still holds it; an error wrapping post.ErrConflict
// otherwise. The tokens are kept. It is one conditional statement, atomic
// across processes.
func (s *Store) MarkRefreshLost(ctx context.Context, id post.AccountID, owner string, at time.Time) error {
	if owner == "" {
		return fmt.Errorf("mark refresh lost %s: empty owner", id)
	}
	if at.IsZero() {
		return fmt.Errorf("mark refresh lost %s: zero time", id)
	}
	res, err := s.ws.refreshLost.ExecContext(ctx, sqltime.Encode(at), string(id), owner)
	if err != nil {
		return fmt.Errorf("mark refresh lost %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("mark refresh lost %s: %w", id, err)
	}
	if n != 1 {
		return fmt.Errorf("mark refresh lost %s: lease not held by %s: %w", id, owner, post.ErrConflict)
	}
	s.accountWrites.Add(1)
	return nil
}

// SetAccountSettings writes the settings c names (zone, posting slots,
// approval flag) alone, in one UPDATE: the others, the status and the
// credential stay.
func (s *Store) SetAccountSettings(ctx context.Context, id post.AccountID, c publishing.AccountChange) error {
	var sets []string
	var args []any
	if c.TimeZone != nil {
		sets, args = append(sets, "time_zone = ?"), append(args, *c.TimeZone)
	}
	if c.Slots != nil {
		var slots []byte
		if len(*c.Slots) > 0 {
			var err error
			if slots, err = json.Marshal(*c.Slots); err != nil {
				return fmt.Errorf("set account %s: encode slots: %w", id, err)
			}
		}
		sets, args = append(sets, "slots = ?"), append(args, string(slots))
	}
	if c.RequireApproval != nil {
		sets, args = append(sets, "require_approval = ?"), append(args, *c.RequireApproval)
	}
	if len(sets) == 0 {
		sets = []string{"id = id"} // nothing to change: still says whether the account exists
	}
	n, err := s.execN(ctx, `UPDATE accounts SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, string(id))...)
	if err != nil {
		return fmt.Errorf("set account %s: %w", id, err)
	}
	if n != 1 {
		return fmt.Errorf("set account %s: %w", id, post.ErrNotFound)
	}
	s.accountWrites.Add(1)
	return nil
}
