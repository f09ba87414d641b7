package telegram

import (
	"context"
	"net/http"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Connector builds a Client per account from the account's stored
// settings; it is what the publishing use cases consume as their Platforms
// port for accounts on Telegram. An account is one chat: its RemoteID is
// the chat id (or a public channel's @username), its BaseURL the Bot API
// server (empty: DefaultBaseURL) and its credential's AccessToken the bot
// token.
type Connector struct {
	// HTTPClient is shared by every Client; nil means one with no Timeout
	// on the default transport (deadlines come from ctx).
	HTTPClient *http.Client
}

// Client returns a client for the account's chat, acting as the bot whose
// token the credential holds.
func (c Connector) Client(_ context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	return New(Config{
		BaseURL:    a.BaseURL,
		Token:      cred.AccessToken,
		ChatID:     a.RemoteID,
		HTTPClient: c.HTTPClient,
	})
}
