package discord

import (
	"context"
	"fmt"
	"net/http"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Connector builds a Client per account from the account's stored
// settings; it is what the publishing use cases consume as their Platforms
// port for accounts on Discord.
//
// The account's fields map as follows:
//
//   - Platform "discord" (PlatformBot): a bot. RemoteID is the channel id;
//     the credential's AccessToken is the bot token.
//   - Platform "discord-webhook" (PlatformWebhook): a webhook. RemoteID is
//     the webhook id; the credential's AccessToken is the webhook token,
//     the webhook's secret, which therefore lives in the secret store and
//     not in the account.
//   - BaseURL is the API origin ("" is https://discord.com).
type Connector struct {
	// HTTPClient is shared by every Client; nil means one with no Timeout
	// on the default transport (deadlines come from ctx).
	HTTPClient *http.Client
	// UserAgent replaces DefaultUserAgent.
	UserAgent string
}

// Client returns a client for the account acting with the credential.
func (c Connector) Client(_ context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	cfg := Config{BaseURL: a.BaseURL, Credential: cred, HTTPClient: c.HTTPClient, UserAgent: c.UserAgent}
	switch a.Platform {
	case PlatformBot:
		cfg.Mode, cfg.ChannelID = ModeBot, a.RemoteID
	case PlatformWebhook:
		cfg.Mode, cfg.WebhookID = ModeWebhook, a.RemoteID
	default:
		return nil, fmt.Errorf("discord: account %s has Platform %q; want %q (bot) or %q (webhook)", a.ID, a.Platform, PlatformBot, PlatformWebhook)
	}
	cl, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", a.ID, err)
	}
	return cl, nil
}
