package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// DefaultAuthorizeEndpoint is the Authorization Window
	// (https://developers.facebook.com/docs/threads/get-started/get-access-tokens-and-permissions,
	// Step 1; newer pages name threads.com, which serves the same window).
	DefaultAuthorizeEndpoint = "https://threads.net/oauth/authorize"
	// longLivedTTL is the life of a long-lived token, and of a refreshed
	// one from the time of its refresh
	// (https://developers.facebook.com/docs/threads/get-started/long-lived-tokens).
	longLivedTTL = 60 * 24 * time.Hour
	// minRefreshAge: a long-lived token "can be refreshed as long as [it
	// is] at least 24 hours old but [has] not expired" (same page).
	minRefreshAge = 24 * time.Hour
)

// DefaultScopes are the permissions oncepost asks for: threads_basic
// (every endpoint), threads_content_publish (the two create steps) and
// threads_delete (DELETE /{media-id})
// (https://developers.facebook.com/docs/threads/get-started;
// https://developers.facebook.com/docs/threads/posts/delete-posts).
var DefaultScopes = []string{"threads_basic", "threads_content_publish", "threads_delete"}

// Refresh exchanges the long-lived access token (cred's, or the client's
// own when cred has none) for a new one, GET {base}/refresh_access_token
// ?grant_type=th_refresh_token&access_token=<token>, Meta's documented
// form with the token in the query
// (https://developers.facebook.com/docs/threads/get-started/long-lived-tokens,
// "Refresh a Long-Lived Token"). The answer {"access_token","token_type",
// "expires_in"} replaces the access token; Threads has no refresh token,
// so RefreshToken stays as given (and is never emptied). On success the
// client uses the new credential from then on.
//
// Threads refreshes only a long-lived token at least 24 hours old and not
// expired. When cred.ExpiresAt says it has expired, Refresh answers
// Rejected "reconnect_needed" without a call; when it says the token is
// younger than 24 hours (more than 59 of its 60 days left), NotPerformed
// with the wait until it is old enough, since Meta's refusal of a young
// token would otherwise read as a dead one.
//
// The call is sent once and classified as a write: no answer after the
// request was written, a 5xx or an unreadable 2xx is Ambiguous (the
// platform may have issued a new token); throttling is NotPerformed; a
// refused token (code 190, 401) or any other refusal is Rejected with
// Reason "reconnect_needed". No error carries the token, though it is in
// the request's URL.
func (c *Client) Refresh(ctx context.Context, cred platform.Credential) (platform.Credential, error) {
	const op = "refresh access token"
	own := c.Credential()
	base := cred
	if base.AccessToken == "" {
		base = own
	}
	token := base.AccessToken
	if token == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op + ": no access token; the account must be connected again"}
	}
	refreshToken := cred.RefreshToken
	if refreshToken == "" {
		refreshToken = own.RefreshToken
	}
	now := c.now()
	if exp := base.ExpiresAt; !exp.IsZero() {
		if !now.Before(exp) {
			return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: fmt.Sprintf(
				"%s: the token expired at %s and Threads cannot refresh an expired token; the account must be connected again", op, exp.UTC().Format(time.RFC3339))}
		}
		if age := longLivedTTL - exp.Sub(now); age < minRefreshAge {
			return platform.Credential{}, &platform.NotPerformed{RetryAfter: minRefreshAge - age, Message: fmt.Sprintf(
				"%s: the token is younger than 24 hours (it expires at %s); Threads refreshes only older ones", op, exp.UTC().Format(time.RFC3339))}
		}
	}
	h := newHTTP(c.hc.HTTPClient(), func() []string { return []string{token, c.accessToken()} })
	resp, err := h.Write(ctx, op, httpcall.Request{
		Method: http.MethodGet,
		URL:    c.base + "/refresh_access_token",
		Query:  url.Values{"grant_type": {"th_refresh_token"}, "access_token": {token}},
	})
	if err != nil {
		return platform.Credential{}, err
	}
	if !resp.OK() {
		return platform.Credential{}, refusedGrant(classify(h, now, op, resp, true), resp.Status)
	}
	tok, err := decodeToken(resp)
	if err != nil {
		return platform.Credential{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the platform may have issued a new token: %w", op, err)}
	}
	next := platform.Credential{
		AccessToken:  tok.AccessToken,
		RefreshToken: refreshToken,
		ExpiresAt:    tok.expiresAt(now),
		ClientID:     base.ClientID,
		ClientSecret: base.ClientSecret,
	}
	c.mu.Lock()
	c.cred = next
	c.mu.Unlock()
	return next, nil
}

// refusedGrant turns a refusal of a token grant (answered with status)
// into Rejected "reconnect_needed": the stored grant is dead. Throttling
// (NotPerformed) and unknown outcomes (Ambiguous) stay as they are.
func refusedGrant(err error, status int) error {
	var (
		ua  *platform.Unauthorized
		rej *platform.Rejected
	)
	switch {
	case errors.As(err, &ua):
		return &platform.Rejected{Status: status, Reason: platform.ReasonReconnectNeeded, Message: ua.Message}
	case errors.As(err, &rej):
		return &platform.Rejected{Status: rej.Status, Reason: platform.ReasonReconnectNeeded, Message: rej.Message}
	}
	return err
}

// tokenAnswer is the answer of the token endpoints.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
}

func (t tokenAnswer) expiresAt(now time.Time) time.Time {
	if t.ExpiresIn <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(t.ExpiresIn) * time.Second)
}

func decodeToken(resp *httpcall.Response) (tokenAnswer, error) {
	if resp.BodyErr != nil {
		return tokenAnswer{}, fmt.Errorf("read answer: %w", resp.BodyErr)
	}
	var t tokenAnswer
	if err := json.Unmarshal(resp.Body, &t); err != nil {
		return tokenAnswer{}, errors.New("the answer is not a token")
	}
	if t.AccessToken == "" {
		return tokenAnswer{}, errors.New("the answer carries no access token")
	}
	return t, nil
}

// OAuthConfig is the Threads app an account is connected with.
type OAuthConfig struct {
	// ClientID and ClientSecret are the Threads app id and secret (App
	// Dashboard > App settings > Basic; the Threads ones, not the Meta
	// app's).
	ClientID     string
	ClientSecret string
	// RedirectURI is where Threads sends the user with the code; it must
	// match one of the app's valid OAuth redirect URIs exactly.
	RedirectURI string
	// Scopes are the permissions asked for; nil means DefaultScopes.
	Scopes []string
	// AuthorizeEndpoint is the Authorization Window; empty means
	// DefaultAuthorizeEndpoint.
	AuthorizeEndpoint string
	// BaseURL is the API root of the token endpoints; empty means
	// DefaultBaseURL.
	BaseURL string
}

// String hides the client secret.
func (c OAuthConfig) String() string {
	return fmt.Sprintf("threads.OAuthConfig{ClientID:%q, ClientSecret:redacted, RedirectURI:%q}", c.ClientID, c.RedirectURI)
}

// GoString hides the client secret from %#v as well.
func (c OAuthConfig) GoString() string { return c.String() }

// AuthorizeURL is the Authorization Window for the account's owner to
// open: {endpoint}?client_id&redirect_uri&scope&response_type=code&state
// (https://developers.facebook.com/docs/threads/get-started/get-access-tokens-and-permissions,
// Step 1), scopes comma-separated. state is omitted when empty.
func AuthorizeURL(cfg OAuthConfig, state string) string {
	endpoint := strings.TrimSpace(cfg.AuthorizeEndpoint)
	if endpoint == "" {
		endpoint = DefaultAuthorizeEndpoint
	}
	scopes := cfg.Scopes
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	esc := make([]string, len(scopes))
	for i, s := range scopes {
		esc[i] = url.QueryEscape(s)
	}
	q := "client_id=" + url.QueryEscape(cfg.ClientID) +
		"&redirect_uri=" + url.QueryEscape(cfg.RedirectURI) +
		"&scope=" + strings.Join(esc, ",") +
		"&response_type=code"
	if state != "" {
		q += "&state=" + url.QueryEscape(state)
	}
	return endpoint + "?" + q
}

// ExchangeCode trades an authorization code for a long-lived credential,
// in two calls
// (https://developers.facebook.com/docs/threads/get-started/get-access-tokens-and-permissions,
// Step 2; https://developers.facebook.com/docs/threads/get-started/long-lived-tokens):
//
//  1. POST {base}/oauth/access_token with client_id, client_secret, code,
//     grant_type=authorization_code and redirect_uri as a form: a
//     short-lived token (one hour);
//  2. GET {base}/access_token?grant_type=th_exchange_token&client_secret
//     &access_token=<short-lived>: a long-lived token (60 days).
//
// The credential carries the long-lived token, its expiry and the app's
// ClientID (Threads' refresh needs no client secret, so none is kept). A
// trailing "#_", which Meta appends to the redirect, is cut from code.
//
// Both calls are sent once and classified as writes (a code can be used
// once): a refusal is Rejected, throttling NotPerformed, no answer after
// the request was written or a 5xx Ambiguous. A failure of step 2 means
// the code is spent: its error says to connect again. No error carries the
// code, the secret or a token.
func ExchangeCode(ctx context.Context, hc *http.Client, cfg OAuthConfig, code string) (platform.Credential, error) {
	const (
		op1 = "exchange authorization code"
		op2 = "exchange for a long-lived token"
	)
	code = strings.TrimSuffix(strings.TrimSpace(code), "#_")
	switch {
	case code == "":
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidParameter, Message: op1 + ": no code given"}
	case cfg.ClientID == "", cfg.ClientSecret == "":
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidParameter, Message: op1 + ": OAuthConfig ClientID and ClientSecret are required"}
	case cfg.RedirectURI == "":
		return platform.Credential{}, &platform.Rejected{Reason: ReasonInvalidParameter, Message: op1 + ": OAuthConfig RedirectURI is required"}
	}
	base, err := baseURL(cfg.BaseURL, "OAuthConfig.BaseURL")
	if err != nil {
		return platform.Credential{}, err
	}
	var short string
	h := newHTTP(hc, func() []string { return []string{cfg.ClientSecret, code, short} })

	form := url.Values{
		"client_id":     {cfg.ClientID},
		"client_secret": {cfg.ClientSecret},
		"code":          {code},
		"grant_type":    {"authorization_code"},
		"redirect_uri":  {cfg.RedirectURI},
	}
	resp, err := h.Write(ctx, op1, httpcall.Request{
		Method: http.MethodPost,
		URL:    base + "/oauth/access_token",
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		Body:   []byte(form.Encode()),
	})
	if err != nil {
		return platform.Credential{}, err
	}
	if !resp.OK() {
		return platform.Credential{}, classify(h, time.Now(), op1, resp, true)
	}
	tok, err := decodeToken(resp)
	if err != nil {
		return platform.Credential{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the code may be spent: %w", op1, err)}
	}
	short = tok.AccessToken

	resp, err = h.Write(ctx, op2, httpcall.Request{
		Method: http.MethodGet,
		URL:    base + "/access_token",
		Query:  url.Values{"grant_type": {"th_exchange_token"}, "client_secret": {cfg.ClientSecret}, "access_token": {short}},
	})
	now := time.Now()
	if err == nil && !resp.OK() {
		err = classify(h, now, op2, resp, true)
	}
	if err == nil {
		if tok, err = decodeToken(resp); err != nil {
			err = &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: %w", op2, err)}
		}
	}
	if err != nil {
		return platform.Credential{}, fmt.Errorf("threads: the code was exchanged but no long-lived token was obtained; connect the account again: %w", err)
	}
	return platform.Credential{AccessToken: tok.AccessToken, ExpiresAt: tok.expiresAt(now), ClientID: cfg.ClientID}, nil
}
