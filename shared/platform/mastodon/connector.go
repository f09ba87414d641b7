package mastodon

import (
	"context"
	"net/http"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Connector builds a Client per account from the account's stored
// settings; it is what the publishing use cases consume as their Platforms
// port for accounts on Mastodon (and on the sandbox).
type Connector struct {
	// ClientID and ClientSecret are the deployment's default OAuth app,
	// used for the refresh grants of credentials that name no app of their
	// own (platform.Credential.ClientID empty). A credential from
	// ExchangeCode names the app registered when its account was
	// connected, and is refreshed with that one (see Client.Refresh).
	ClientID, ClientSecret string
	// HTTPClient is shared by every Client; nil means one with no Timeout
	// on the default transport (deadlines come from ctx).
	HTTPClient *http.Client
	// MediaPollInterval is passed to every Client; 0 means the default.
	MediaPollInterval time.Duration
	// Unpaced is passed to every Client (the sandbox).
	Unpaced bool
}

// Client returns a client for the account acting with the credential.
func (c Connector) Client(_ context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	return New(Config{
		BaseURL:           a.BaseURL,
		AccountID:         a.RemoteID,
		Credential:        cred,
		ClientID:          c.ClientID,
		ClientSecret:      c.ClientSecret,
		HTTPClient:        c.HTTPClient,
		MediaPollInterval: c.MediaPollInterval,
		Unpaced:           c.Unpaced,
	})
}
