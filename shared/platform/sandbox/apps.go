package sandbox

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// oobRedirectURI is the redirect URI of an app that shows the code to the
// user instead of redirecting.
const oobRedirectURI = "urn:ietf:wg:oauth:2.0:oob"

// maxAppNameLength is Mastodon's limit on client_name.
const maxAppNameLength = 60

// knownScopes are the OAuth scopes Mastodon knows
// (config/initializers/doorkeeper.rb). The sandbox records a token's scope
// but does not enforce it.
var knownScopes = func() map[string]bool {
	set := map[string]bool{}
	for _, sc := range strings.Fields(`
		read write follow push profile crypto
		read:accounts read:blocks read:bookmarks read:favourites read:filters read:follows
		read:lists read:mutes read:notifications read:search read:statuses
		write:accounts write:blocks write:bookmarks write:conversations write:favourites
		write:filters write:follows write:lists write:media write:mutes write:notifications
		write:reports write:statuses
		admin:read admin:read:accounts admin:read:reports admin:read:domain_allows
		admin:read:domain_blocks admin:read:ip_blocks admin:read:email_domain_blocks
		admin:read:canonical_email_blocks
		admin:write admin:write:accounts admin:write:reports admin:write:domain_allows
		admin:write:domain_blocks admin:write:ip_blocks admin:write:email_domain_blocks
		admin:write:canonical_email_blocks`) {
		set[sc] = true
	}
	return set
}()

// app is an application: one registered with POST /api/v1/apps or by
// AddToken, or the sandbox's own (Server.ownApp). Every access token
// belongs to one, and every status records the one of the token that
// posted it. An app never changes once made.
type app struct {
	id           string
	name         string
	website      string
	redirectURIs []string
	scopes       []string
	clientID     string
	clientSecret string
	createdAt    time.Time
}

// authCode is what an authorization code stands for until it is spent.
type authCode struct {
	clientID    string
	redirectURI string
	scope       string
	accountID   string
	expiresAt   time.Time
}

// authCodeTTL is how long an authorization code can be exchanged, as in
// Doorkeeper.
const authCodeTTL = 10 * time.Minute

// appJSON is Mastodon's CredentialApplication entity: the Application
// with its client credentials.
type appJSON struct {
	verifiedAppJSON
	ClientID              string `json:"client_id"`
	ClientSecret          string `json:"client_secret"`
	ClientSecretExpiresAt int64  `json:"client_secret_expires_at"`
}

// appParams are the fields of POST /api/v1/apps.
type appParams struct {
	clientName   string
	redirectURIs string // one or more, separated by white space
	scopes       string // space-separated
	website      string
}

// stringOrList is a JSON string or array of strings, joined by spaces.
type stringOrList string

// UnmarshalJSON accepts "a b" and ["a", "b"].
func (f *stringOrList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = stringOrList(s)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("must be a string or an array of strings")
	}
	*f = stringOrList(strings.Join(list, " "))
	return nil
}

// parseAppParams reads a registration, form-encoded or JSON.
func parseAppParams(c *call) (appParams, error) {
	mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if mt == "application/json" {
		var in struct {
			ClientName   string       `json:"client_name"`
			RedirectURIs stringOrList `json:"redirect_uris"`
			Scopes       stringOrList `json:"scopes"`
			Website      string       `json:"website"`
		}
		if err := json.Unmarshal(c.body, &in); err != nil {
			return appParams{}, fmt.Errorf("parsing JSON body: %w", err)
		}
		return appParams{clientName: in.ClientName, redirectURIs: string(in.RedirectURIs), scopes: string(in.Scopes), website: in.Website}, nil
	}
	values, _, err := parseForm(c)
	if err != nil {
		return appParams{}, err
	}
	return appParams{
		clientName:   values.Get("client_name"),
		redirectURIs: strings.Join(slices.Concat(values["redirect_uris"], values["redirect_uris[]"]), " "),
		scopes:       strings.Join(slices.Concat(values["scopes"], values["scopes[]"]), " "),
		website:      values.Get("website"),
	}, nil
}

// createApp is POST /api/v1/apps: it registers an OAuth application and
// answers its credentials, or 422 with every validation failure in
// Mastodon's words.
func (s *Server) createApp(c *call) reply {
	p, err := parseAppParams(c)
	if err != nil {
		return errorReply(http.StatusBadRequest, "Error occurred while parsing request parameters")
	}
	name := strings.TrimSpace(p.clientName)
	redirects := strings.Fields(p.redirectURIs)
	scopes := strings.Fields(p.scopes)
	if len(scopes) == 0 {
		scopes = []string{"read"}
	}
	website := strings.TrimSpace(p.website)
	var problems []string
	switch {
	case name == "":
		problems = append(problems, "Application name can't be blank")
	case utf8.RuneCountInString(name) > maxAppNameLength:
		problems = append(problems, fmt.Sprintf("Application name is too long (maximum is %d characters)", maxAppNameLength))
	}
	if len(redirects) == 0 {
		problems = append(problems, "Redirect URI can't be blank")
	}
	for _, u := range redirects {
		if msg := checkRedirectURI(u); msg != "" {
			problems = append(problems, "Redirect URI "+msg)
			break
		}
	}
	for _, sc := range scopes {
		if !knownScopes[sc] {
			problems = append(problems, "Scopes doesn't match configured on the server.")
			break
		}
	}
	if website != "" {
		if u, err := url.Parse(website); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, "Application website is invalid")
		}
	}
	if len(problems) > 0 {
		return errorReply(http.StatusUnprocessableEntity, "Validation failed: "+strings.Join(problems, ", "))
	}
	scopes = slices.Compact(scopes)

	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.registerAppLocked(name, website, redirects, scopes)
	return reply{status: http.StatusOK, body: appJSON{verifiedAppJSON: a.entity(), ClientID: a.clientID, ClientSecret: a.clientSecret}}
}

// registerAppLocked makes and journals a new app with fresh client
// credentials; the caller has checked the fields.
func (s *Server) registerAppLocked(name, website string, redirects, scopes []string) *app {
	now := s.opts.Now()
	a := &app{
		id: s.nextIDLocked(now), name: name, website: website, redirectURIs: redirects, scopes: scopes,
		clientID: rand.Text(), clientSecret: rand.Text(), createdAt: now,
	}
	s.apps[a.clientID] = a
	s.journalLocked(record{Op: opApp, App: &appRec{
		ID: a.id, Name: a.name, Website: a.website, RedirectURIs: a.redirectURIs, Scopes: a.scopes,
		ClientID: a.clientID, ClientSecret: a.clientSecret, CreatedAt: a.createdAt,
	}})
	return a
}

// AddToken's refusals, for the control API's answer.
var (
	errAppName   = errors.New("invalid app name")
	errNoAccount = errors.New("no account")
)

// AddToken issues an access and a refresh token for the account that
// belong to a new application named appName, as if the account's owner
// had signed in with another client (Mastodon's web interface, a phone
// app): a status posted with the access token records and shows that
// application, and GET /api/v1/apps/verify_credentials answers it. The
// application is registered as POST /api/v1/apps would register it
// (out-of-band redirect URI, scopes "read write", no website), a new one
// on every call. As for AddAccount's tokens, any client the sandbox knows
// may refresh the refresh token, and the tokens a refresh issues keep the
// application; they are never the account's latest (Accounts). It fails
// if the account does not exist, if appName is blank or longer than
// Mastodon's 60 characters, or if the tokens cannot be saved in the
// DataDir.
func (s *Server) AddToken(accountID, appName string) (Account, error) {
	name := strings.TrimSpace(appName)
	if name == "" || utf8.RuneCountInString(name) > maxAppNameLength {
		return Account{}, fmt.Errorf("sandbox: add token for account %q: %w: the app name must be 1 to %d characters, got %q", accountID, errAppName, maxAppNameLength, appName)
	}
	s.mu.Lock()
	a := s.accounts[accountID]
	if a == nil {
		s.mu.Unlock()
		return Account{}, fmt.Errorf("sandbox: add token: %w %q", errNoAccount, accountID)
	}
	ap := s.registerAppLocked(name, "", []string{oobRedirectURI}, strings.Fields(defaultScope))
	access, refresh := s.issueTokensLocked(a.id, s.opts.Now(), "", defaultScope, ap)
	s.journalLocked(record{Op: opGrant, Grant: &grantRec{Account: a.id, Tokens: s.tokensRecLocked(access, refresh)}})
	s.mu.Unlock()
	if err := s.sync(); err != nil {
		return Account{}, fmt.Errorf("sandbox: add token for account %q: %w", accountID, err)
	}
	return Account{ID: a.id, Username: a.username, AccessToken: access, RefreshToken: refresh}, nil
}

// verifiedAppJSON is the Application entity GET
// /api/v1/apps/verify_credentials answers, in the fields the Mastodon
// documentation gives for 4.3 (id, name, website, scopes, redirect_uri,
// redirect_uris and the deprecated vapid_key), without the client
// credentials.
type verifiedAppJSON struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Website      *string  `json:"website"`
	Scopes       []string `json:"scopes"`
	RedirectURI  string   `json:"redirect_uri"`
	RedirectURIs []string `json:"redirect_uris"`
	VapidKey     string   `json:"vapid_key"`
}

// verifyAppCredentials is GET /api/v1/apps/verify_credentials: the
// application the bearer token belongs to
// (https://docs.joinmastodon.org/methods/apps/#verify_credentials). A
// missing or invalid token is answered 401 before it is called, as on
// every authenticated route.
func (s *Server) verifyAppCredentials(c *call) reply {
	return reply{status: http.StatusOK, body: c.app.entity()}
}

// entity is the app as Mastodon's Application entity. It shares the app's
// slices: an app never changes once made.
func (a *app) entity() verifiedAppJSON {
	out := verifiedAppJSON{
		ID: a.id, Name: a.name, Scopes: a.scopes, RedirectURI: strings.Join(a.redirectURIs, "\n"),
		RedirectURIs: a.redirectURIs,
	}
	if a.website != "" {
		out.Website = strPtr(a.website)
	}
	return out
}

// checkRedirectURI returns what is wrong with a redirect URI, in
// Doorkeeper's words, or "".
func checkRedirectURI(raw string) string {
	if raw == oobRedirectURI {
		return ""
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "must be a valid URI."
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "cannot contain a fragment."
	case !u.IsAbs():
		return "must be an absolute URI."
	}
	return ""
}
