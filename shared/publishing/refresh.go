package publishing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// refreshLease bounds one refresh; a worker that dies mid-refresh frees
// the account after it.
const refreshLease = 30 * time.Second

// refresh renews the account's credential after a 401 under the account's
// refresh lease, so two workers never spend one single-use refresh token.
// If another worker already rotated the credential, that one is used. A
// refused refresh is a Rejected with reason reconnect_needed; a busy lease
// or a transient failure is NotPerformed (the job comes back later).
func (p *Publisher) refresh(ctx context.Context, acc post.Account, client platform.Client, stale platform.Credential) (platform.Credential, error) {
	now := p.now()
	// Unique per call: workers of one process share p.Owner, and the lease
	// must keep them from spending one single-use refresh token twice.
	owner := p.Owner + "/refresh/" + ledger.NewHandle()
	if err := p.Accounts.LeaseRefresh(ctx, acc.ID, owner, now, now.Add(refreshLease)); err != nil {
		if errors.Is(err, post.ErrConflict) {
			return stale, &platform.NotPerformed{RetryAfter: time.Second, Message: "credential refresh in progress elsewhere"}
		}
		return stale, fmt.Errorf("lease refresh of %s: %w", acc.ID, err)
	}
	cur, err := p.Accounts.Credential(ctx, acc.ID)
	if err != nil {
		p.dropRefreshLease(ctx, acc.ID, owner)
		return stale, fmt.Errorf("credential of %s: %w", acc.ID, err)
	}
	if cur.AccessToken != stale.AccessToken {
		// Rotated by someone else since we read it.
		p.dropRefreshLease(ctx, acc.ID, owner)
		return cur, nil
	}
	cctx, cancel := p.callContext(ctx)
	fresh, err := client.Refresh(cctx, cur)
	cancel()
	if err != nil {
		p.dropRefreshLease(ctx, acc.ID, owner)
		var rej *platform.Rejected
		if errors.As(err, &rej) {
			p.log().ErrorContext(ctx, "credential refresh refused; account needs reconnecting", "account", acc.ID, "reason", rej.Reason)
			return stale, &platform.Rejected{Status: rej.Status, Reason: ReasonReconnectNeeded, Message: rej.Message}
		}
		return stale, &platform.NotPerformed{Message: "credential refresh: " + err.Error()}
	}
	if fresh.RefreshToken == "" {
		// Never overwrite a refresh token with nothing (postiz #1884).
		fresh.RefreshToken = cur.RefreshToken
	}
	if fresh.AccessToken == "" {
		p.dropRefreshLease(ctx, acc.ID, owner)
		return stale, &platform.Rejected{Reason: ReasonReconnectNeeded, Message: "refresh returned no access token"}
	}
	// The platform has rotated the tokens: save them even if our caller
	// gives up now, or the account needs reconnecting.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), orDefault(p.RecordMargin, 2*time.Second))
	defer cancel()
	if err := p.Accounts.SaveRefreshed(sctx, acc.ID, owner, &fresh); err != nil {
		p.log().ErrorContext(ctx, "rotated credential could not be saved; the account may need reconnecting", "account", acc.ID, "err", err)
		return stale, &platform.NotPerformed{Message: "save refreshed credential: " + err.Error()}
	}
	p.log().InfoContext(ctx, "credential refreshed", "account", acc.ID)
	return fresh, nil
}

// dropRefreshLease frees the account's refresh lease; a failure only
// delays the next refresh until the lease expires.
func (p *Publisher) dropRefreshLease(ctx context.Context, id post.AccountID, owner string) {
	if err := p.Accounts.SaveRefreshed(context.WithoutCancel(ctx), id, owner, nil); err != nil {
		p.log().WarnContext(ctx, "drop refresh lease", "account", id, "err", err)
	}
}
