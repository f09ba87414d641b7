package linkedin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	oauthlinkedin "golang.org/x/oauth2/linkedin"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// DefaultScopes are the permissions AuthorizeURL asks for: openid and
// profile for Me (the member's id), w_member_social to post as the member.
// Reading the member's posts back (r_member_social) is a restricted
// permission LinkedIn grants on approval; organizations need
// w_organization_social and r_organization_social.
var DefaultScopes = []string{"openid", "profile", "w_member_social"}

// OAuthConfig is the deployment's LinkedIn app, for connecting an account.
type OAuthConfig struct {
	ClientID, ClientSecret string
	// RedirectURL must be one of the app's registered redirect URLs.
	RedirectURL string
	// Scopes are the permissions asked for; nil means DefaultScopes.
	Scopes []string
	// AuthURL and TokenURL default to LinkedIn's
	// (golang.org/x/oauth2/linkedin.Endpoint).
	AuthURL, TokenURL string
}

func (cfg OAuthConfig) oauth2() oauth2.Config {
	ep := oauthlinkedin.Endpoint
	if cfg.AuthURL != "" {
		ep.AuthURL = cfg.AuthURL
	}
	if cfg.TokenURL != "" {
		ep.TokenURL = cfg.TokenURL
	}
	scopes := cfg.Scopes
	if scopes == nil {
		scopes = DefaultScopes
	}
	return oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL, Scopes: scopes, Endpoint: ep}
}

// AuthorizeURL is the page where the member approves the app:
// https://www.linkedin.com/oauth/v2/authorization?response_type=code&client_id=…&redirect_uri=…&state=…&scope=…
// (https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow,
// step 2), built by golang.org/x/oauth2. state must be checked against the
// one LinkedIn sends back to the redirect URL.
func AuthorizeURL(cfg OAuthConfig, state string) string {
	conf := cfg.oauth2()
	return conf.AuthCodeURL(state)
}

// tokenAnswer is the token endpoint's answer, a grant or an OAuth error.
type tokenAnswer struct {
	AccessToken           string `json:"access_token"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshToken          string `json:"refresh_token"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
	Scope                 string `json:"scope"`
	Error                 string `json:"error"`
	ErrorDescription      string `json:"error_description"`
}

// tokenGrant posts a grant to the token endpoint through httpcall: sent
// once (a code or a refresh token may be spent by the answer), no
// redirect followed, a lost answer Ambiguous and an unsent request
// NotPerformed. golang.org/x/oauth2 would do the same exchange but not
// tell a request never sent from an answer lost. A 2xx is decoded; a 2xx
// without an access token is Ambiguous (the grant may have been spent).
// Any other answer is returned with its decoded OAuth error for the
// caller to classify.
func tokenGrant(ctx context.Context, hc *httpcall.Client, op, tokenURL string, form url.Values) (tokenAnswer, *httpcall.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: tokenURL, Header: h, Body: []byte(form.Encode())})
	if err != nil {
		return tokenAnswer{}, nil, err
	}
	var ans tokenAnswer
	decodeErr := json.Unmarshal(resp.Body, &ans)
	if !resp.OK() {
		return ans, resp, nil
	}
	if decodeErr != nil || ans.AccessToken == "" {
		return tokenAnswer{}, nil, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf(
			"%s: LinkedIn answered %d without a readable access token; it may have issued one", op, resp.Status)}
	}
	return ans, resp, nil
}

// oauthDetail is the OAuth error of a refused grant as text, secrets
// redacted.
func oauthDetail(ans tokenAnswer, resp *httpcall.Response, secrets ...string) string {
	detail := ans.Error
	if ans.ErrorDescription != "" {
		if detail != "" {
			detail += ": "
		}
		detail += ans.ErrorDescription
	}
	if detail == "" {
		detail = describe(resp)
	}
	if detail == "" {
		detail = strings.ToLower(http.StatusText(resp.Status))
	}
	if len(detail) > 300 {
		detail = detail[:300] + "…"
	}
	return httpcall.RedactString(detail, secrets...)
}

// retryableGrant classifies the refusals of a grant that do not refuse
// the grant itself: a 5xx or server_error (Ambiguous: the server may have
// acted), 429, 408, 425 or temporarily_unavailable (NotPerformed). It is
// nil for every other refusal.
func retryableGrant(op, detail, spent string, ans tokenAnswer, resp *httpcall.Response, now time.Time) error {
	switch s := resp.Status; {
	case s >= 500, ans.Error == "server_error":
		return &platform.Ambiguous{Status: s, Err: fmt.Errorf("%s: %s; %s", op, detail, spent)}
	case s == http.StatusTooManyRequests, s == http.StatusRequestTimeout, s == http.StatusTooEarly, ans.Error == "temporarily_unavailable":
		wait, _ := httpcall.StandardRetryAfter(resp.Header, now)
		return &platform.NotPerformed{Status: s, RetryAfter: wait, Message: fmt.Sprintf("%s: %s", op, detail)}
	}
	return nil
}

// Refresh exchanges the refresh token (cred's, or the client's own when
// cred has none) for a new access token with the refresh-token grant
// (POST Config.TokenURL, grant_type=refresh_token with refresh_token,
// client_id and client_secret in the form,
// https://learn.microsoft.com/en-us/linkedin/shared/authentication/programmatic-refresh-tokens).
// LinkedIn issues refresh tokens only to approved partners; without one
// the answer is Rejected with platform.ReasonReconnectNeeded. The new pair
// replaces the old; an answer without a refresh token keeps the old one.
// The grant is made as the app that issued the tokens (the credential's
// ClientID, else Config.ClientID).
//
// Outcomes: a refusal of the grant (invalid_grant; LinkedIn's
// invalid_request "The provided authorization grant or refresh token is
// invalid, expired or revoked"; any other 4xx) is Rejected
// ReasonReconnectNeeded; a 5xx or a lost answer Ambiguous (LinkedIn may
// have issued new tokens); a request not sent or a 429 NotPerformed.
func (c *Client) Refresh(ctx context.Context, cred platform.Credential) (platform.Credential, error) {
	const op = "refresh token"
	own := c.Credential()
	refresh := cred.RefreshToken
	if refresh == "" {
		refresh = own.RefreshToken
	}
	if refresh == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op +
			": no refresh token (LinkedIn issues them only to approved partners); the account must be connected again"}
	}
	// The id and secret are taken together: a secret never goes with
	// another app's id.
	app := cred
	if app.ClientID == "" {
		app = own
	}
	clientID, secret := app.ClientID, app.ClientSecret
	if clientID == "" {
		// The deployment's default app; the new credential names none.
		app = platform.Credential{}
		clientID, secret = c.clientID, c.secret
	}
	if clientID == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op + ": no OAuth client configured"}
	}
	form := url.Values{}
	form.Set("grant_type", "refresh_token")
	form.Set("refresh_token", refresh)
	form.Set("client_id", clientID)
	form.Set("client_secret", secret)
	ans, resp, err := tokenGrant(ctx, c.http, op, c.tokenURL, form)
	if err != nil {
		return platform.Credential{}, err
	}
	if !resp.OK() {
		detail := oauthDetail(ans, resp, refresh, secret, own.AccessToken)
		if err := retryableGrant(op, detail, "LinkedIn may have issued new tokens", ans, resp, c.now()); err != nil {
			return platform.Credential{}, err
		}
		msg := fmt.Sprintf("%s: LinkedIn refused the refresh token (%s); the account must be connected again", op, detail)
		if !cred.RefreshLostAt.IsZero() {
			msg += fmt.Sprintf(" (the answer to a refresh with this token was lost at %s)", cred.RefreshLostAt.UTC().Format(time.RFC3339))
		}
		return platform.Credential{}, &platform.Rejected{Status: resp.Status, Reason: platform.ReasonReconnectNeeded, Message: msg}
	}
	next := platform.Credential{
		AccessToken:  ans.AccessToken,
		RefreshToken: ans.RefreshToken,
		ExpiresAt:    expiry(c.now(), ans.ExpiresIn),
		ClientID:     app.ClientID,
		ClientSecret: app.ClientSecret,
	}
	if next.RefreshToken == "" {
		next.RefreshToken = refresh
	}
	c.mu.Lock()
	c.cred = next
	c.mu.Unlock()
	return next, nil
}

func expiry(now time.Time, seconds int64) time.Time {
	if seconds <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(seconds) * time.Second).UTC()
}

// ExchangeCode trades an authorization code for the member's tokens
// (POST cfg.TokenURL with grant_type=authorization_code, code, client_id,
// client_secret and redirect_uri in the form,
// https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow,
// step 3). The credential carries the access token, its expiry, the
// refresh token when LinkedIn issues one (approved partners), and the
// app's ClientID and ClientSecret (refresh grants must use that app).
//
// A code can be used once and lives 30 minutes, so the grant is sent once:
// a refusal is Rejected with the OAuth error as Reason (start again with
// a new code); a 5xx or a lost answer is Ambiguous (the code may have
// been spent; trying it again is harmless, at worst refused); a request
// not sent or a 429 NotPerformed. hc nil means a client without Timeout.
// No error carries the code or the client secret.
func ExchangeCode(ctx context.Context, hc *http.Client, cfg OAuthConfig, code string) (platform.Credential, error) {
	const op = "exchange authorization code"
	code = strings.TrimSpace(code)
	if code == "" {
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": no code given"}
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" || cfg.RedirectURL == "" {
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": the OAuth config needs ClientID, ClientSecret and RedirectURL"}
	}
	conf := cfg.oauth2()
	tokenURL, err := absoluteURL("TokenURL", conf.Endpoint.TokenURL, DefaultTokenURL)
	if err != nil {
		return platform.Credential{}, err
	}
	form := url.Values{}
	form.Set("grant_type", "authorization_code")
	form.Set("code", code)
	form.Set("client_id", cfg.ClientID)
	form.Set("client_secret", cfg.ClientSecret)
	form.Set("redirect_uri", cfg.RedirectURL)
	hcl := httpcall.New(hc)
	ans, resp, err := tokenGrant(ctx, hcl, op, tokenURL, form)
	if err != nil {
		var amb *platform.Ambiguous
		if errors.As(err, &amb) {
			return platform.Credential{}, &platform.Ambiguous{Status: amb.Status, Err: fmt.Errorf(
				"%s; the code may have been spent: trying it again is harmless, and if it is refused start again with a new code", httpcall.RedactString(amb.Err.Error(), code, cfg.ClientSecret))}
		}
		return platform.Credential{}, err
	}
	if !resp.OK() {
		detail := oauthDetail(ans, resp, code, cfg.ClientSecret)
		if err := retryableGrant(op, detail, "the code may have been spent: trying it again is harmless", ans, resp, hcl.Now()); err != nil {
			return platform.Credential{}, err
		}
		reason := httpcall.RedactString(ans.Error, code, cfg.ClientSecret)
		if reason == "" {
			reason = fmt.Sprintf("http_%d", resp.Status)
		}
		return platform.Credential{}, &platform.Rejected{Status: resp.Status, Reason: reason, Message: fmt.Sprintf(
			"%s: LinkedIn refused the code (%s); it is wrong, expired (codes live 30 minutes), already used or was issued "+
				"for another app or redirect URL: start again with a new code", op, detail)}
	}
	return platform.Credential{
		AccessToken:  ans.AccessToken,
		RefreshToken: ans.RefreshToken,
		ExpiresAt:    expiry(hcl.Now(), ans.ExpiresIn),
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
	}, nil
}

// Profile is the member a token acts as.
type Profile struct {
	// URN is the member's person URN, urn:li:person:<sub>: the author to
	// post as and the account's RemoteID.
	URN string
	// Sub is the member's id from OpenID Connect.
	Sub string
	// Name is the member's display name, possibly empty.
	Name string
}

// Me reads the member the token belongs to (GET {base}/v2/userinfo,
// LinkedIn's OpenID Connect userinfo, which needs the openid and profile
// scopes) and returns its person URN, urn:li:person:<sub>. base empty
// means DefaultBaseURL; hc nil a client without Timeout. A read: transient
// failures are retried and then NotPerformed; 401 is Unauthorized and 403
// (a token without openid) Rejected.
func Me(ctx context.Context, hc *http.Client, base, token string) (Profile, error) {
	const op = "read member"
	base, err := absoluteURL("BaseURL", base, DefaultBaseURL)
	if err != nil {
		return Profile{}, err
	}
	if token == "" {
		return Profile{}, errors.New("linkedin: Me needs an access token")
	}
	hcl := httpcall.New(hc)
	hcl.Describe = func(r *httpcall.Response) string { return httpcall.RedactString(describe(r), token) }
	resp, err := hcl.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: base + "/v2/userinfo", Header: httpcall.Bearer(token)})
	if err != nil {
		return Profile{}, err
	}
	if resp.Status != http.StatusOK {
		return Profile{}, hcl.Classify(op, resp, false)
	}
	var u struct {
		Sub  string `json:"sub"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(resp.Body, &u); err != nil {
		return Profile{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode userinfo: %v", op, err)}
	}
	if u.Sub == "" {
		return Profile{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": no sub in the userinfo answer"}
	}
	return Profile{URN: "urn:li:person:" + u.Sub, Sub: u.Sub, Name: u.Name}, nil
}
