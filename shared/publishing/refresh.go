package publishing

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	owner := p.Owner + "/refresh"
	if err := p.Accounts.LeaseRefresh(ctx, acc.ID, owner, now, now.Add(refreshLease)); err != nil {
		if errors.Is(err, post.ErrConflict) {
			return stale, &platform.NotPerformed{RetryAfter: time.Second, Message: "credential refresh in progress elsewhere"}
		}
		return stale, fmt.Errorf("lease refresh of %s: %w", acc.ID, err)
	}
	cur, err := p.Accounts.Credential(ctx, acc.ID)
	if err != nil {
		_ = p.Accounts.SaveRefreshed(ctx, acc.ID, owner, nil)
		return stale, fmt.Errorf("credential of %s: %w", acc.ID, err)
	}
	if cur.AccessToken != stale.AccessToken {
		// Rotated by someone else since we read it.
		if err := p.Accounts.SaveRefreshed(ctx, acc.ID, owner, nil); err != nil {
			return stale, fmt.Errorf("drop refresh lease of %s: %w", acc.ID, err)
		}
		return cur, nil
	}
	cctx, cancel := p.callContext(ctx)
	fresh, err := client.Refresh(cctx, cur)
	cancel()
	if err != nil {
		if lerr := p.Accounts.SaveRefreshed(ctx, acc.ID, owner, nil); lerr != nil {
			p.log().ErrorContext(ctx, "drop refresh lease", "account", acc.ID, "err", lerr)
		}
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
		_ = p.Accounts.SaveRefreshed(ctx, acc.ID, owner, nil)
		return stale, &platform.Rejected{Reason: ReasonReconnectNeeded, Message: "refresh returned no access token"}
	}
	if err := p.Accounts.SaveRefreshed(ctx, acc.ID, owner, &fresh); err != nil {
		return stale, fmt.Errorf("save refreshed credential of %s: %w", acc.ID, err)
	}
	p.log().InfoContext(ctx, "credential refreshed", "account", acc.ID)
	return fresh, nil
}
