package sandbox

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"time"
)

// The OAuth error descriptions, as Doorkeeper (Mastodon's OAuth provider)
// words them.
const (
	descInvalidRequest  = "The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed."
	descInvalidClient   = "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method."
	descInvalidGrant    = "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client."
	descUnsupportedType = "The authorization grant type is not supported by the authorization server."
)

// oauthToken is POST /oauth/token, with grant_type authorization_code or
// refresh_token. The client may authenticate in the form (client_id,
// client_secret) or with HTTP Basic (URL-encoded, as golang.org/x/oauth2
// sends it); the clients are the sandbox's own (Options.ClientID and
// ClientSecret) and every app registered with POST /api/v1/apps. Both
// grants issue an access and a refresh token.
func (s *Server) oauthToken(c *call) reply {
	values, _, err := parseForm(c)
	if err != nil {
		return oauthError("invalid_request", descInvalidRequest)
	}
	clientID, clientSecret := values.Get("client_id"), values.Get("client_secret")
	if user, pass, ok := c.r.BasicAuth(); ok {
		clientID, clientSecret = unescapeOr(user), unescapeOr(pass)
	}
	switch values.Get("grant_type") {
	case "refresh_token":
		return s.refreshGrant(values, clientID, clientSecret)
	case "authorization_code":
		return s.codeGrant(values, clientID, clientSecret)
	}
	return reply{status: http.StatusBadRequest, body: oauthErrorJSON{Error: "unsupported_grant_type", ErrorDescription: descUnsupportedType}}
}

// refreshGrant rotates a refresh token: the response carries a new one and
// the old refresh token and the access token issued with it stop working;
// the new tokens belong to the same application as the old.
// A token issued through an app's authorization code can only be refreshed
// by that app; the sandbox's own tokens by any client it knows. A client
// that fails to authenticate gets 400 invalid_grant (the sandbox has
// always answered so; Mastodon answers 401 invalid_client).
func (s *Server) refreshGrant(values url.Values, clientID, clientSecret string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.clientKnownLocked(clientID, clientSecret) {
		return oauthError("invalid_grant", descInvalidClient)
	}
	old := values.Get("refresh_token")
	g, ok := s.refresh[old]
	if !ok || s.accounts[g.accountID] == nil || (g.clientID != "" && g.clientID != clientID) {
		return oauthError("invalid_grant", descInvalidGrant)
	}
	delete(s.refresh, old)
	if tok := s.access[g.accessToken]; tok != nil {
		tok.revoked = true
	}
	now := s.opts.Now()
	access, refresh := s.issueTokensLocked(g.accountID, now, g.clientID, g.scope, g.app)
	s.journalLocked(record{Op: opGrant, Grant: &grantRec{
		Account: g.accountID, Tokens: s.tokensRecLocked(access, refresh),
		SpentRefresh: old, RevokeAccess: g.accessToken,
	}})
	return s.tokenReply(access, refresh, g.scope, now)
}

// codeGrant exchanges an authorization code from POST /oauth/authorize,
// once, within its ten minutes, for the app it was issued to and with the
// redirect_uri it was issued for. The tokens belong to that app.
func (s *Server) codeGrant(values url.Values, clientID, clientSecret string) reply {
	code, redirectURI := values.Get("code"), values.Get("redirect_uri")
	if code == "" || redirectURI == "" {
		return oauthError("invalid_request", descInvalidRequest)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.clientKnownLocked(clientID, clientSecret) {
		return reply{status: http.StatusUnauthorized, body: oauthErrorJSON{Error: "invalid_client", ErrorDescription: descInvalidClient}}
	}
	now := s.opts.Now()
	ac := s.codes[code]
	ap := s.apps[clientID]
	if ac == nil || ac.clientID != clientID || ac.redirectURI != redirectURI || !now.Before(ac.expiresAt) || s.accounts[ac.accountID] == nil {
		return oauthError("invalid_grant", descInvalidGrant)
	}
	delete(s.codes, code)
	access, refresh := s.issueTokensLocked(ac.accountID, now, clientID, ac.scope, ap)
	s.journalLocked(record{Op: opGrant, Grant: &grantRec{
		Account: ac.accountID, Tokens: s.tokensRecLocked(access, refresh), SpentCode: code,
	}})
	return s.tokenReply(access, refresh, ac.scope, now)
}

// clientKnownLocked reports whether id and secret are the sandbox's own
// client or a registered app's.
func (s *Server) clientKnownLocked(id, secret string) bool {
	if id == "" {
		return false
	}
	if id == s.opts.ClientID {
		return subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ClientSecret)) == 1
	}
	if a := s.apps[id]; a != nil {
		return subtle.ConstantTimeCompare([]byte(secret), []byte(a.clientSecret)) == 1
	}
	return false
}

// tokenReply is the token endpoint's success answer.
func (s *Server) tokenReply(access, refresh, scope string, now time.Time) reply {
	out := tokenJSON{
		AccessToken:  access,
		TokenType:    "Bearer",
		Scope:        scope,
		CreatedAt:    now.Unix(),
		RefreshToken: refresh,
	}
	if s.opts.TokenTTL > 0 {
		out.ExpiresIn = int64((s.opts.TokenTTL + time.Second - 1) / time.Second)
	}
	return reply{status: http.StatusOK, header: http.Header{"Cache-Control": {"no-store"}}, body: out}
}

func oauthError(code, description string) reply {
	return reply{status: http.StatusBadRequest, body: oauthErrorJSON{Error: code, ErrorDescription: description}}
}

// unescapeOr URL-decodes a Basic auth part, keeping it as is when it is
// not valid URL encoding.
func unescapeOr(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}
