package sandbox

import (
	"net/http"
	"net/url"
	"time"
)

// oauthToken is POST /oauth/token with grant_type=refresh_token. The
// client may authenticate in the form (client_id, client_secret) or with
// HTTP Basic (URL-encoded, as golang.org/x/oauth2 sends it). The refresh
// token rotates: the response carries a new one and the old refresh token
// and the access token issued with it stop working.
func (s *Server) oauthToken(c *call) reply {
	values, _, err := parseForm(c)
	if err != nil {
		return oauthError("invalid_request", "The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.")
	}
	if gt := values.Get("grant_type"); gt != "refresh_token" {
		return reply{status: http.StatusBadRequest, body: oauthErrorJSON{
			Error:            "unsupported_grant_type",
			ErrorDescription: "The authorization grant type is not supported by the authorization server.",
		}}
	}
	clientID, clientSecret := values.Get("client_id"), values.Get("client_secret")
	if user, pass, ok := c.r.BasicAuth(); ok {
		clientID, clientSecret = unescapeOr(user), unescapeOr(pass)
	}
	if clientID != s.opts.ClientID || clientSecret != s.opts.ClientSecret {
		return oauthError("invalid_grant", "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	old := values.Get("refresh_token")
	g, ok := s.refresh[old]
	if !ok || s.accounts[g.accountID] == nil {
		return oauthError("invalid_grant", "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.")
	}
	delete(s.refresh, old)
	if tok := s.access[g.accessToken]; tok != nil {
		tok.revoked = true
	}
	now := s.opts.Now()
	access, refresh := s.issueTokensLocked(g.accountID, now)
	out := tokenJSON{
		AccessToken:  access,
		TokenType:    "Bearer",
		Scope:        "read write",
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
