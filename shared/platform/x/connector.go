package x

import (
	"context"
	"net/http"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Connector builds a Client per account from the account's stored
// settings; it is what the publishing use cases consume as their Platforms
// port for accounts on X.
type Connector struct {
	// ClientID and ClientSecret are the deployment's OAuth 2.0 app, used
	// for refresh grants of credentials that name no app of their own.
	ClientID, ClientSecret string
	// TokenURL overrides the token endpoint; empty means the account's
	// base URL + "/2/oauth2/token".
	TokenURL string
	// HTTPClient is shared by every Client; nil means one with no Timeout
	// (deadlines come from ctx).
	HTTPClient *http.Client
	// LookupPages is passed to every Client; 0 means the default (5).
	LookupPages int
}

// Client returns a client for the account acting with the credential:
// a.BaseURL is the API root (empty: https://api.x.com) and a.RemoteID the
// account's numeric user id (empty: read with GET /2/users/me).
func (c Connector) Client(_ context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	return New(Config{
		BaseURL:      a.BaseURL,
		UserID:       a.RemoteID,
		Credential:   cred,
		ClientID:     c.ClientID,
		ClientSecret: c.ClientSecret,
		TokenURL:     c.TokenURL,
		HTTPClient:   c.HTTPClient,
		LookupPages:  c.LookupPages,
	})
}
