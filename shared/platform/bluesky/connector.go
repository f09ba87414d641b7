package bluesky

import (
	"context"
	"net/http"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Connector builds a Client per account: post.Account.BaseURL is the PDS,
// RemoteID the account's DID.
type Connector struct {
	// HTTPClient is shared by every Client; nil means one with no Timeout.
	HTTPClient *http.Client
}

// Client returns a client for the account acting with the credential.
func (c Connector) Client(_ context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	return New(Config{BaseURL: a.BaseURL, DID: a.RemoteID, Credential: cred, HTTPClient: c.HTTPClient})
}
