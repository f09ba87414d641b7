package mastodon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// Connecting an account is Mastodon's OAuth authorization-code flow
// (https://docs.joinmastodon.org/client/token/): RegisterApp once per
// server, AuthorizeURL for the account's owner to open and approve, then
// ExchangeCode with the code the server shows (or redirects with).

const (
	// OOBRedirectURI is the redirect URI that makes the server show the
	// authorization code to the user instead of redirecting
	// (https://docs.joinmastodon.org/methods/oauth/#authorize).
	OOBRedirectURI = "urn:ietf:wg:oauth:2.0:oob"
	// DefaultScopes are the scopes oncepost needs: read (its own timeline,
	// status sources, verify_credentials) and write (statuses, media, and
	// deleting statuses).
	DefaultScopes = "read write"
)

// AppRequest describes the OAuth application to register on a server.
type AppRequest struct {
	// ClientName is the application's name, shown to the user on the
	// authorization page. Required.
	ClientName string
	// RedirectURI is where the server sends the user with the code;
	// empty means OOBRedirectURI.
	RedirectURI string
	// Scopes is a space-separated scope list; empty means DefaultScopes.
	Scopes string
	// Website is the application's homepage, optional.
	Website string
}

// App is a registered OAuth application: what AuthorizeURL and
// ExchangeCode need, and what refresh grants for its tokens must use
// (platform.Credential.ClientID and ClientSecret). ClientSecret is a
// password: App's String hides it.
type App struct {
	ClientID     string
	ClientSecret string
	// RedirectURI is the one redirect URI the app was registered with.
	RedirectURI string
	// Scopes are the app's scopes, space separated.
	Scopes string
}

// String hides the client secret, so an App printed by mistake leaks
// nothing but its public client id.
func (a App) String() string {
	return fmt.Sprintf("mastodon.App{ClientID:%q, ClientSecret:redacted, RedirectURI:%q, Scopes:%q}", a.ClientID, a.RedirectURI, a.Scopes)
}

// GoString hides the client secret from %#v as well.
func (a App) GoString() string { return a.String() }

// withDefaults fills an empty redirect URI and scope list.
func (a App) withDefaults() App {
	if a.RedirectURI == "" {
		a.RedirectURI = OOBRedirectURI
	}
	if strings.TrimSpace(a.Scopes) == "" {
		a.Scopes = DefaultScopes
	}
	return a
}

// RegisterApp registers an OAuth application on the server at baseURL
// (POST /api/v1/apps, https://docs.joinmastodon.org/methods/apps/#create),
// sending client_name, redirect_uris, scopes and website as form fields.
// hc nil means a client without Timeout (deadlines come from ctx).
//
// The call creates an app on the server, so it is sent once and classified
// like every write (see classify): 422 (a bad redirect URI or scope) is
// Rejected with the server's message, 429 NotPerformed, a 5xx or a lost
// answer Ambiguous. Registering again after an Ambiguous outcome is safe:
// at worst it leaves an unused app behind.
func RegisterApp(ctx context.Context, hc *http.Client, baseURL string, r AppRequest) (App, error) {
	const op = "register app"
	name := strings.TrimSpace(r.ClientName)
	if name == "" {
		return App{}, errors.New("mastodon: register app: ClientName is required")
	}
	c, err := anonymous(hc, baseURL)
	if err != nil {
		return App{}, err
	}
	want := App{RedirectURI: r.RedirectURI, Scopes: r.Scopes}.withDefaults()
	form := url.Values{
		"client_name":   {name},
		"redirect_uris": {want.RedirectURI},
		"scopes":        {want.Scopes},
	}
	if r.Website != "" {
		form.Set("website", r.Website)
	}
	resp, err := c.api().Write(ctx, op, c.call(http.MethodPost, "/api/v1/apps", "application/x-www-form-urlencoded", []byte(form.Encode())))
	if err != nil {
		return App{}, err
	}
	if !resp.OK() {
		return App{}, c.classify(op, resp, true)
	}
	// CredentialApplication (https://docs.joinmastodon.org/entities/Application/):
	// scopes is an array since 4.3.0 and absent before.
	a, err := decodeCreated(resp, func(a struct {
		ClientID     string          `json:"client_id"`
		ClientSecret string          `json:"client_secret"`
		Scopes       json.RawMessage `json:"scopes"`
	}) bool {
		return a.ClientID != "" && a.ClientSecret != ""
	})
	if err != nil {
		return App{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the app may have been registered: %w", op, err)}
	}
	app := want
	app.ClientID, app.ClientSecret = a.ClientID, a.ClientSecret
	if s := scopeList(a.Scopes); s != "" {
		app.Scopes = s
	}
	return app, nil
}

// scopeList reads an app's scopes, a JSON array of strings (Mastodon 4.3
// and later) or a space-separated string; "" when absent or unreadable.
func scopeList(raw json.RawMessage) string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, " ")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.Join(strings.Fields(s), " ")
	}
	return ""
}

// oauthConfig is the app as golang.org/x/oauth2 sees it. The client
// credentials go in the form (AuthStyleInParams), as Mastodon documents
// for /oauth/token, and oauth2 never probes a second style with a second
// request.
func oauthConfig(base string, app App) oauth2.Config {
	app = app.withDefaults()
	return oauth2.Config{
		ClientID:     app.ClientID,
		ClientSecret: app.ClientSecret,
		RedirectURL:  app.RedirectURI,
		Scopes:       strings.Fields(app.Scopes),
		Endpoint: oauth2.Endpoint{
			AuthURL:   base + "/oauth/authorize",
			TokenURL:  base + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
}

// AuthorizeURL is the page where the account's owner approves the app
// (GET /oauth/authorize?response_type=code&client_id=…&redirect_uri=…&scope=…,
// https://docs.joinmastodon.org/methods/oauth/#authorize), built by
// golang.org/x/oauth2 with net/url encoding. It carries no state: with
// the out-of-band redirect the user copies the code by hand. An empty
// RedirectURI or Scopes in app means OOBRedirectURI and DefaultScopes, as
// in RegisterApp. baseURL is used as given, without a trailing slash; it
// is not validated here (RegisterApp and ExchangeCode do).
func AuthorizeURL(baseURL string, app App) string {
	base := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	conf := oauthConfig(base, app)
	return conf.AuthCodeURL("")
}

// ExchangeCode trades an authorization code for the account's tokens
// (POST /oauth/token with grant_type=authorization_code,
// https://docs.joinmastodon.org/methods/oauth/#token) through
// golang.org/x/oauth2, sending code, client_id, client_secret,
// redirect_uri and scope as form fields. The credential carries the access
// token, the refresh token and expiry when the server issues them, and the
// app's ClientID and ClientSecret (refresh grants must use that app).
//
// A code can be used once, so the grant is sent once (no redirect is
// followed: it would re-send the code and the secret elsewhere) and its
// outcome classified:
//
//   - refused by the server: *platform.Rejected with the OAuth error as
//     Reason and a message naming the cause and what to do, e.g.
//     invalid_grant (code wrong, expired or already used: start again with
//     a new code) or invalid_client (the app is unknown: register again);
//   - 429 or temporarily_unavailable: NotPerformed with RetryAfter;
//   - not sent (refused connection, ctx ended first): NotPerformed, the
//     code is intact;
//   - a 5xx, server_error, or no answer after the request was written:
//     Ambiguous, the code may have been spent; trying again with it is
//     harmless (at worst invalid_grant).
//
// No error carries the code or the client secret, even if the server
// echoes them.
func ExchangeCode(ctx context.Context, hc *http.Client, baseURL string, app App, code string) (platform.Credential, error) {
	const op = "exchange authorization code"
	code = strings.TrimSpace(code)
	if code == "" {
		return platform.Credential{}, &platform.Rejected{Reason: "invalid_request", Message: op + ": no code given"}
	}
	if app.ClientID == "" || app.ClientSecret == "" {
		return platform.Credential{}, &platform.Rejected{Reason: "invalid_request", Message: op + ": the app has no client id or secret; register it first"}
	}
	c, err := anonymous(hc, baseURL)
	if err != nil {
		return platform.Credential{}, err
	}
	app = app.withDefaults()
	conf := oauthConfig(c.baseURL, app)
	ctx, written := traceWritten(ctx)
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.api().TokenClient())
	// Mastodon documents scope on this request as equal to the scope the
	// user approved.
	tok, err := conf.Exchange(ctx, code, oauth2.SetAuthURLParam("scope", strings.Join(strings.Fields(app.Scopes), " ")))
	if err != nil {
		return platform.Credential{}, c.classifyExchange(op, err, written.Load(), code, app.ClientSecret)
	}
	return platform.Credential{
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		ExpiresAt:    tok.Expiry,
		ClientID:     app.ClientID,
		ClientSecret: app.ClientSecret,
	}, nil
}

// classifyExchange maps a failed authorization-code grant (see
// ExchangeCode). Every message passes through httpcall.RedactString.
func (c *Client) classifyExchange(op string, err error, written bool, secrets ...string) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		// A transport error names the token URL, never the form; oauth2's
		// own errors (an unreadable or token-less 2xx) carry no token.
		// Should one ever carry a secret, it is redacted and not wrapped.
		if msg := httpcall.RedactString(err.Error(), secrets...); msg != err.Error() {
			err = errors.New(msg)
		}
		if written {
			return &platform.Ambiguous{Err: fmt.Errorf("%s: the server may have spent the code; trying again with it is harmless, and if it is refused start again with a new code: %w", op, err)}
		}
		return &platform.NotPerformed{Message: fmt.Sprintf("%s: request not sent: %v", op, err)}
	}
	status := 0
	var header http.Header
	if re.Response != nil {
		status = re.Response.StatusCode
		header = re.Response.Header
	}
	detail := re.ErrorDescription
	if detail == "" {
		detail = strings.ToLower(http.StatusText(status))
	}
	if detail == "" {
		detail = fmt.Sprintf("http %d", status)
	}
	detail = httpcall.RedactString(detail, secrets...)
	code := re.ErrorCode
	switch {
	case status >= 500, code == "server_error":
		return &platform.Ambiguous{Status: status, Err: fmt.Errorf("%s: server error (%s); the code may have been spent: trying again with it is harmless, and if it is refused start again with a new code", op, detail)}
	case status == http.StatusTooManyRequests, code == "temporarily_unavailable":
		return &platform.NotPerformed{Status: status, RetryAfter: retryAfter(status, header, c.now()), Message: fmt.Sprintf("%s: the server is busy (%s); try again later with the same code", op, detail)}
	case status >= 300 && status < 400:
		return &platform.Rejected{Status: status, Reason: fmt.Sprintf("http_%d", status), Message: fmt.Sprintf(
			"%s: unexpected redirect to %q; check the server URL", op, httpcall.RedactString(header.Get("Location"), secrets...))}
	}
	reason := code
	if reason == "" {
		reason = fmt.Sprintf("http_%d", status)
	}
	var msg string
	switch code {
	case "invalid_grant":
		msg = fmt.Sprintf("the authorization code was refused (invalid_grant): %s; it is wrong, expired, already used or was issued for another app or redirect URI; start again with a new code", detail)
	case "invalid_client":
		msg = fmt.Sprintf("the server does not accept the app's client id and secret (invalid_client): %s; register the app again and start over", detail)
	case "invalid_scope":
		msg = fmt.Sprintf("the requested scopes were refused (invalid_scope): %s; the scopes must be the ones the app was registered and authorized with", detail)
	case "unauthorized_client", "unsupported_grant_type":
		msg = fmt.Sprintf("the server does not allow this app the authorization-code grant (%s): %s", code, detail)
	case "":
		msg = fmt.Sprintf("the token request was refused (status %d): %s", status, detail)
	default:
		msg = fmt.Sprintf("the token request was refused (%s): %s", httpcall.RedactString(code, secrets...), detail)
	}
	return &platform.Rejected{Status: status, Reason: httpcall.RedactString(reason, secrets...), Message: op + ": " + msg}
}
