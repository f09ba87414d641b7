package x

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// Connecting an account is X's OAuth 2.0 authorization code flow with
// PKCE (https://docs.x.com/fundamentals/authentication/oauth-2-0/authorization-code
// and …/user-access-token): NewPKCE for a verifier and its challenge,
// AuthorizeURL for the account's owner to open, then ExchangeCode with
// the code X redirects back with (valid 30 seconds) and the verifier.

const (
	// DefaultAuthURL is X's authorization page.
	DefaultAuthURL = "https://x.com/i/oauth2/authorize"
	// DefaultTokenURL is X's token endpoint.
	DefaultTokenURL = "https://api.x.com/2/oauth2/token"
)

// DefaultScopes are what oncepost needs: read and write posts, read the
// account (the timeline endpoints require users.read), a refresh token
// (offline.access), and media uploads.
var DefaultScopes = []string{"tweet.read", "tweet.write", "users.read", "offline.access", "media.write"}

// OAuthConfig is the deployment's OAuth 2.0 app on X.
type OAuthConfig struct {
	// ClientID is the app's OAuth 2.0 client id. Required.
	ClientID string
	// ClientSecret is set for a confidential client (web app, automated
	// app or bot) and empty for a public one.
	ClientSecret string
	// RedirectURL is the callback registered with the app (exact match).
	RedirectURL string
	// Scopes default to DefaultScopes.
	Scopes []string
	// AuthURL and TokenURL default to DefaultAuthURL and DefaultTokenURL.
	AuthURL, TokenURL string
}

// String hides the client secret.
func (c OAuthConfig) String() string {
	return fmt.Sprintf("x.OAuthConfig{ClientID:%q, ClientSecret:redacted, RedirectURL:%q}", c.ClientID, c.RedirectURL)
}

// GoString hides the client secret from %#v as well.
func (c OAuthConfig) GoString() string { return c.String() }

func (c OAuthConfig) oauth2() oauth2.Config {
	scopes := c.Scopes
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	return oauth2.Config{
		ClientID:    c.ClientID,
		RedirectURL: c.RedirectURL,
		Scopes:      scopes,
		Endpoint:    oauth2.Endpoint{AuthURL: firstNonEmpty(c.AuthURL, DefaultAuthURL), TokenURL: c.tokenURL()},
	}
}

func (c OAuthConfig) tokenURL() string { return firstNonEmpty(c.TokenURL, DefaultTokenURL) }

// NewPKCE returns a fresh PKCE code verifier, to keep until ExchangeCode,
// and its S256 code challenge, for AuthorizeURL (RFC 7636), made with
// golang.org/x/oauth2's helpers.
func NewPKCE() (verifier, challenge string) {
	verifier = oauth2.GenerateVerifier()
	return verifier, oauth2.S256ChallengeFromVerifier(verifier)
}

// AuthorizeURL is the page where the account's owner approves the app:
// response_type=code, client_id, redirect_uri, scope (space separated),
// state, code_challenge and code_challenge_method=S256, built by
// golang.org/x/oauth2 with net/url encoding.
func AuthorizeURL(cfg OAuthConfig, state, codeChallenge string) string {
	conf := cfg.oauth2()
	return conf.AuthCodeURL(state,
		oauth2.SetAuthURLParam("code_challenge", codeChallenge),
		oauth2.SetAuthURLParam("code_challenge_method", "S256"))
}

// ExchangeCode trades an authorization code for the account's tokens:
// POST to the token endpoint with grant_type=authorization_code, code,
// redirect_uri, code_verifier and client_id as a form; a confidential
// client also authenticates with HTTP Basic (client id and secret). hc
// nil means a client without Timeout (deadlines come from ctx).
//
// The code is single use, so the request is sent once through httpcall
// and classified: a refusal is Rejected with the OAuth error as Reason
// (invalid_request or invalid_grant: the code is wrong, expired or used;
// start again); 429 is NotPerformed; a 5xx, server_error or a lost answer
// is Ambiguous (the code may be spent; trying it again is harmless). The
// credential carries the app's ClientID and ClientSecret, which its
// refresh grants use. No error carries the code, verifier or secret.
func ExchangeCode(ctx context.Context, hc *http.Client, cfg OAuthConfig, code, codeVerifier string) (platform.Credential, error) {
	const op = "exchange authorization code"
	code = strings.TrimSpace(code)
	switch {
	case code == "":
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": no code given"}
	case codeVerifier == "":
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": no PKCE code verifier given"}
	case cfg.ClientID == "":
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": OAuthConfig.ClientID is required"}
	case cfg.RedirectURL == "":
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": OAuthConfig.RedirectURL is required"}
	}
	tokenURL, err := rootURL("TokenURL", cfg.tokenURL(), DefaultTokenURL)
	if err != nil {
		return platform.Credential{}, err
	}
	g := grant{
		op:       op,
		http:     httpcall.New(hc),
		tokenURL: tokenURL,
		app:      platform.Credential{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret},
		secrets:  []string{code, codeVerifier, cfg.ClientSecret},
	}
	tok, err := g.send(ctx, url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {cfg.RedirectURL},
		"code_verifier": {codeVerifier},
	}, func(status int, oauthErr, msg string) error {
		reason := oauthErr
		if reason == "" {
			reason = fmt.Sprintf("http_%d", status)
		}
		return &platform.Rejected{Status: status, Reason: reason, Message: msg + "; start again with a new authorization"}
	})
	if err != nil {
		return platform.Credential{}, err
	}
	return tok.credential(g.http.Now(), g.app, ""), nil
}

// Refresh exchanges the refresh token (cred's, or the client's own when
// cred has none) for new tokens: POST to the token endpoint with
// grant_type=refresh_token, refresh_token and client_id, plus HTTP Basic
// for a confidential app (https://docs.x.com/fundamentals/authentication/oauth-2-0/user-access-token,
// step 5). The app is the credential's (ClientID and ClientSecret), else
// the client's own credential's, else Config.ClientID and ClientSecret.
//
// X's refresh tokens are single use: the answer's refresh token replaces
// the old one, and an answer without one keeps the old one. On success
// the client uses the new credential from then on. Outcomes:
//
//   - invalid_request or invalid_grant (X's answers for a spent, revoked
//     or unknown refresh token), or any other refusal: Rejected with
//     platform.ReasonReconnectNeeded; when cred records a lost answer the
//     message says the token was probably spent then;
//   - 429 or temporarily_unavailable: NotPerformed;
//   - not sent (refused connection, ctx ended first): NotPerformed;
//   - a 5xx, server_error, a lost answer after the request was written,
//     or a 2xx without a token: Ambiguous, X may have rotated the tokens
//     and spent the refresh token.
func (c *Client) Refresh(ctx context.Context, cred platform.Credential) (platform.Credential, error) {
	const op = "refresh token"
	own := c.Credential()
	refresh := firstNonEmpty(cred.RefreshToken, own.RefreshToken)
	if refresh == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op + ": no refresh token; the account must be connected again"}
	}
	app := cred
	if app.ClientID == "" {
		app = own
	}
	if app.ClientID == "" {
		app = c.app
	}
	app = platform.Credential{ClientID: app.ClientID, ClientSecret: app.ClientSecret}
	if app.ClientID == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op + ": no OAuth client configured"}
	}
	g := grant{
		op:       op,
		http:     c.http,
		tokenURL: c.tokenURL,
		app:      app,
		secrets:  []string{refresh, cred.AccessToken, own.AccessToken, own.RefreshToken, app.ClientSecret, c.app.ClientSecret},
	}
	tok, err := g.send(ctx, url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {refresh},
	}, func(status int, _, msg string) error {
		if !cred.RefreshLostAt.IsZero() {
			msg += fmt.Sprintf(" (the answer to a refresh with this token was lost at %s; it was probably spent then)",
				cred.RefreshLostAt.UTC().Format(time.RFC3339))
		}
		return &platform.Rejected{Status: status, Reason: platform.ReasonReconnectNeeded, Message: msg}
	})
	if err != nil {
		return platform.Credential{}, err
	}
	next := tok.credential(c.http.Now(), app, refresh)
	c.mu.Lock()
	c.cred = next
	c.mu.Unlock()
	return next, nil
}

// grant is one request to the token endpoint.
type grant struct {
	op       string
	http     *httpcall.Client
	tokenURL string
	app      platform.Credential
	// secrets are redacted from every message.
	secrets []string
}

// tokenAnswer is the token endpoint's success answer (RFC 6749 §5.1).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	TokenType    string `json:"token_type"`
	Scope        string `json:"scope"`
}

// credential is the answer as a credential; an answer without a refresh
// token keeps keep.
func (t tokenAnswer) credential(now time.Time, app platform.Credential, keep string) platform.Credential {
	cred := platform.Credential{
		AccessToken:  t.AccessToken,
		RefreshToken: firstNonEmpty(t.RefreshToken, keep),
		ClientID:     app.ClientID,
		ClientSecret: app.ClientSecret,
	}
	if t.ExpiresIn > 0 {
		cred.ExpiresAt = now.Add(time.Duration(t.ExpiresIn) * time.Second)
	}
	return cred
}

// send posts the grant's form, with client_id always (X requires it from
// public clients) and HTTP Basic for a confidential app (RFC 6749 §2.3.1:
// id and secret form-encoded first), exactly once, and classifies the
// answer; refused builds the error of a refusal.
func (g grant) send(ctx context.Context, form url.Values, refused func(status int, oauthErr, msg string) error) (tokenAnswer, error) {
	form.Set("client_id", g.app.ClientID)
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	if g.app.ClientSecret != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(g.app.ClientID) + ":" + url.QueryEscape(g.app.ClientSecret)))
		h.Set("Authorization", "Basic "+basic)
		g.secrets = append(g.secrets, basic)
	}
	resp, err := g.http.Write(ctx, g.op, httpcall.Request{Method: http.MethodPost, URL: g.tokenURL, Header: h, Body: []byte(form.Encode())})
	if err != nil {
		return tokenAnswer{}, err
	}
	var oauthErr problem
	_ = json.Unmarshal(resp.Body, &oauthErr)
	msg := httpcall.RedactString(describe(resp), g.secrets...)
	if msg == "" {
		msg = strings.ToLower(http.StatusText(resp.Status))
	}
	msg = fmt.Sprintf("%s: %s", g.op, msg)
	code := httpcall.RedactString(oauthErr.Error, g.secrets...)
	switch s := resp.Status; {
	case s >= 200 && s < 300:
		var tok tokenAnswer
		if resp.BodyErr != nil || json.Unmarshal(resp.Body, &tok) != nil || tok.AccessToken == "" {
			return tokenAnswer{}, &platform.Ambiguous{Status: s, Err: fmt.Errorf("%s: the answer carries no access token; X may have spent the grant", g.op)}
		}
		return tok, nil
	case s >= 500, code == "server_error":
		return tokenAnswer{}, &platform.Ambiguous{Status: s, Err: fmt.Errorf("%s; X may have spent the grant", msg)}
	case s == http.StatusTooManyRequests, s == http.StatusRequestTimeout, s == http.StatusTooEarly, code == "temporarily_unavailable":
		// Not httpcall's Classify: its message would not know this
		// grant's secrets.
		now := g.http.Now()
		wait, ok := httpcall.StandardRetryAfter(resp.Header, now)
		if !ok {
			wait = httpcall.ClampWait(rateLimitReset(resp, now))
		}
		return tokenAnswer{}, &platform.NotPerformed{Status: s, RetryAfter: wait, Message: msg}
	case s >= 300 && s < 400:
		return tokenAnswer{}, &platform.Rejected{Status: s, Reason: fmt.Sprintf("http_%d", s), Message: g.op + ": unexpected redirect; check the token URL"}
	}
	return tokenAnswer{}, refused(resp.Status, code, msg)
}
