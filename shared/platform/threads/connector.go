package threads

import (
	"context"
	"net/http"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Connector builds a Client per account from the account's stored
// settings: post.Account.BaseURL is the API root (empty means
// DefaultBaseURL) and post.Account.RemoteID the Threads user id.
type Connector struct {
	// HTTPClient is shared by every Client; nil means one with no Timeout
	// on the default transport (deadlines come from ctx).
	HTTPClient *http.Client
}

// Client returns a client for the account acting with the credential.
func (c Connector) Client(_ context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	return New(Config{
		BaseURL:    a.BaseURL,
		UserID:     a.RemoteID,
		Credential: cred,
		HTTPClient: c.HTTPClient,
	})
}
