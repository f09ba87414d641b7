package linkedin

import (
	"context"
	"net/http"
	"strings"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Connector builds a Client per account from the account's stored
// settings: post.Account.RemoteID is the author URN (urn:li:person:… from
// Me, or urn:li:organization:…), post.Account.BaseURL the API root
// (DefaultBaseURL when empty).
type Connector struct {
	// ClientID and ClientSecret are the deployment's default OAuth app,
	// for refresh grants of credentials that name no app of their own.
	ClientID, ClientSecret string
	// TokenURL is the OAuth token endpoint; empty means DefaultTokenURL.
	TokenURL string
	// APIVersion is the LinkedIn-Version sent; empty means
	// DefaultAPIVersion. Set it to move off a version LinkedIn sunsets
	// (426 NONEXISTENT_VERSION) without a new build.
	APIVersion string
	// CanReadMemberPosts says that the deployment's app holds the
	// restricted r_member_social permission, so members' posts can be
	// read back (Lookup). Organizations are read with r_organization_social
	// and are assumed readable.
	CanReadMemberPosts bool
	// HTTPClient is shared by every Client; nil means one with no Timeout
	// (deadlines come from ctx).
	HTTPClient *http.Client
}

// Client returns a client for the account acting with the credential.
func (c Connector) Client(_ context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	var canRead *bool
	if c.CanReadMemberPosts && strings.HasPrefix(a.RemoteID, "urn:li:person:") {
		yes := true
		canRead = &yes
	}
	return New(Config{
		BaseURL:      a.BaseURL,
		Author:       a.RemoteID,
		Credential:   cred,
		ClientID:     c.ClientID,
		ClientSecret: c.ClientSecret,
		TokenURL:     c.TokenURL,
		APIVersion:   c.APIVersion,
		CanReadPosts: canRead,
		HTTPClient:   c.HTTPClient,
	})
}
