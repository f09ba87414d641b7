package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
	"golang.org/x/oauth2"
)

// appAnswer is the answer of POST /api/v1/apps.
type appAnswer struct {
	ID                    string   `json:"id"`
	Name                  string   `json:"name"`
	Website               *string  `json:"website"`
	Scopes                []string `json:"scopes"`
	RedirectURI           string   `json:"redirect_uri"`
	RedirectURIs          []string `json:"redirect_uris"`
	ClientID              string   `json:"client_id"`
	ClientSecret          string   `json:"client_secret"`
	ClientSecretExpiresAt int64    `json:"client_secret_expires_at"`
	VapidKey              *string  `json:"vapid_key"`
}

// registerApp registers an app with a form and fails the test unless it
// is answered 200.
func registerApp(t *testing.T, s *Server, form url.Values) appAnswer {
	t.Helper()
	r := mustSend(t, http.MethodPost, s.URL()+"/api/v1/apps", "", formType, []byte(form.Encode()), nil)
	if r.status != 200 {
		t.Fatalf("POST /api/v1/apps: %d %s", r.status, r.body)
	}
	var a appAnswer
	r.decode(t, &a)
	return a
}

// noRedirects is a client that returns redirects instead of following
// them.
var noRedirects = &http.Client{
	Timeout:       5 * time.Second,
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// postAuthorize submits the authorize form.
func postAuthorize(t *testing.T, s *Server, form url.Values) response {
	t.Helper()
	r, err := send(noRedirects, http.MethodPost, s.URL()+"/oauth/authorize", "", formType, []byte(form.Encode()), nil)
	if err != nil {
		t.Fatalf("POST /oauth/authorize: %v", err)
	}
	return r
}

// authorizeOOB authorizes an out-of-band app as an account and returns the
// code the page shows.
func authorizeOOB(t *testing.T, s *Server, ap appAnswer, accountID, scope string) string {
	t.Helper()
	r := postAuthorize(t, s, url.Values{"client_id": {ap.ClientID}, "redirect_uri": {oobRedirectURI}, "scope": {scope}, "account_id": {accountID}})
	if r.status != 200 {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	code := elementText(t, r.body, "authorization-code")
	if code == "" {
		t.Fatalf("no code on the page:\n%s", r.body)
	}
	return code
}

// exchangeCode is the authorization_code grant.
func exchangeCode(t *testing.T, s *Server, clientID, secret, code, redirectURI string) response {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID}, "client_secret": {secret},
		"code": {code}, "redirect_uri": {redirectURI}}
	return mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, []byte(form.Encode()), nil)
}

// elementText is the text of the element with the id, "" if none.
func elementText(t *testing.T, page []byte, id string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		t.Fatalf("parsing the page: %v", err)
	}
	var found string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		for _, a := range n.Attr {
			if a.Key == "id" && a.Val == id && n.FirstChild != nil {
				found = n.FirstChild.Data
			}
		}
	}
	return found
}

// htmlForm is a form of a page: where it posts, its fields, its button.
type htmlForm struct {
	Method, Action string
	Fields         url.Values
	Button         string
}

func pageForms(t *testing.T, page []byte) []htmlForm {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		t.Fatalf("parsing the page: %v", err)
	}
	attr := func(n *html.Node, key string) string {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val
			}
		}
		return ""
	}
	var forms []htmlForm
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "form" {
			continue
		}
		f := htmlForm{Method: attr(n, "method"), Action: attr(n, "action"), Fields: url.Values{}}
		for c := range n.Descendants() {
			switch {
			case c.Type == html.ElementNode && c.Data == "input":
				f.Fields.Add(attr(c, "name"), attr(c, "value"))
			case c.Type == html.ElementNode && c.Data == "button" && c.FirstChild != nil:
				f.Button = c.FirstChild.Data
			}
		}
		forms = append(forms, f)
	}
	return forms
}

func TestCreateApp(t *testing.T) {
	s := start(t, Options{})
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		want        appAnswer // ID, ClientID and ClientSecret are not compared
		wantError   string
	}{
		{
			name: "form, out of band, default scope", contentType: formType,
			body:       url.Values{"client_name": {"Scheduler"}, "redirect_uris": {oobRedirectURI}}.Encode(),
			wantStatus: 200,
			want:       appAnswer{Name: "Scheduler", Scopes: []string{"read"}, RedirectURI: oobRedirectURI, RedirectURIs: []string{oobRedirectURI}, VapidKey: strPtr("")},
		},
		{
			name: "JSON, two redirect URIs, scopes and website", contentType: "application/json",
			body:       `{"client_name":"Scheduler","redirect_uris":"https://app.example/cb\nurn:ietf:wg:oauth:2.0:oob","scopes":"read write","website":"https://app.example"}`,
			wantStatus: 200,
			want: appAnswer{Name: "Scheduler", Website: strPtr("https://app.example"), Scopes: []string{"read", "write"},
				RedirectURI: "https://app.example/cb\n" + oobRedirectURI, RedirectURIs: []string{"https://app.example/cb", oobRedirectURI}, VapidKey: strPtr("")},
		},
		{
			name: "JSON array of redirect URIs", contentType: "application/json",
			body:       `{"client_name":"x","redirect_uris":["http://127.0.0.1:8000/cb"],"scopes":"write:statuses write:media"}`,
			wantStatus: 200,
			want: appAnswer{Name: "x", Scopes: []string{"write:statuses", "write:media"}, RedirectURI: "http://127.0.0.1:8000/cb",
				RedirectURIs: []string{"http://127.0.0.1:8000/cb"}, VapidKey: strPtr("")},
		},
		{name: "no client_name", contentType: formType, body: "redirect_uris=" + url.QueryEscape(oobRedirectURI),
			wantStatus: 422, wantError: "Validation failed: Application name can't be blank"},
		{name: "no redirect_uris", contentType: "application/json", body: `{"client_name":"x"}`,
			wantStatus: 422, wantError: "Validation failed: Redirect URI can't be blank"},
		{name: "nothing", contentType: formType, body: "",
			wantStatus: 422, wantError: "Validation failed: Application name can't be blank, Redirect URI can't be blank"},
		{name: "relative redirect URI", contentType: formType, body: "client_name=x&redirect_uris=/cb",
			wantStatus: 422, wantError: "Validation failed: Redirect URI must be an absolute URI."},
		{name: "redirect URI with a fragment", contentType: formType, body: "client_name=x&redirect_uris=" + url.QueryEscape("https://a.example/cb#x"),
			wantStatus: 422, wantError: "Validation failed: Redirect URI cannot contain a fragment."},
		{name: "unknown scope", contentType: formType, body: "client_name=x&redirect_uris=" + url.QueryEscape(oobRedirectURI) + "&scopes=read+everything",
			wantStatus: 422, wantError: "Validation failed: Scopes doesn't match configured on the server."},
		{name: "bad website", contentType: formType, body: "client_name=x&redirect_uris=" + url.QueryEscape(oobRedirectURI) + "&website=javascript:alert(1)",
			wantStatus: 422, wantError: "Validation failed: Application website is invalid"},
		{name: "name too long", contentType: formType, body: "client_name=" + strings.Repeat("n", 61) + "&redirect_uris=" + url.QueryEscape(oobRedirectURI),
			wantStatus: 422, wantError: "Validation failed: Application name is too long (maximum is 60 characters)"},
		{name: "malformed JSON", contentType: "application/json", body: `{"client_name":`,
			wantStatus: 400, wantError: "Error occurred while parsing request parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSend(t, http.MethodPost, s.URL()+"/api/v1/apps", "", tt.contentType, []byte(tt.body), nil)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tt.wantStatus)
			}
			if tt.wantError != "" {
				if got := errorOf(t, r); got != tt.wantError {
					t.Errorf("error %q, want %q", got, tt.wantError)
				}
				return
			}
			var got appAnswer
			r.decode(t, &got)
			if got.ID == "" || len(got.ClientID) < 20 || len(got.ClientSecret) < 20 || got.ClientID == got.ClientSecret {
				t.Errorf("id %q, client id and secret of %d and %d characters: want an id and two distinct long secrets", got.ID, len(got.ClientID), len(got.ClientSecret))
			}
			tt.want.ID, tt.want.ClientID, tt.want.ClientSecret = got.ID, got.ClientID, got.ClientSecret
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("app (-want +got):\n%s", diff)
			}
			var raw map[string]json.RawMessage
			r.decode(t, &raw)
			if string(raw["website"]) != "null" && tt.want.Website == nil {
				t.Errorf("website = %s, want null", raw["website"])
			}
		})
	}
}

func TestAuthorizationCodeFlow(t *testing.T) {
	clock := newClock()
	s := start(t, Options{Now: clock.Now})
	alice := s.AddAccount("alice")
	s.AddAccount(`x"><script>alert(1)</script>`)
	const redirect = "http://127.0.0.1:9/callback?from=sandbox"
	ap := registerApp(t, s, url.Values{"client_name": {`Sched<uler>`}, "redirect_uris": {redirect + " " + oobRedirectURI}, "scopes": {"read write"}})
	other := registerApp(t, s, url.Values{"client_name": {"Other"}, "redirect_uris": {redirect}, "scopes": {"read write"}})

	authURL := s.URL() + "/oauth/authorize?" + url.Values{"response_type": {"code"}, "client_id": {ap.ClientID},
		"redirect_uri": {redirect}, "scope": {"read write"}, "state": {"st8"}}.Encode()
	page := get(t, authURL, "")
	if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Fatalf("authorize page: %d %s", page.status, page.header.Get("Content-Type"))
	}
	for _, bad := range []string{"<script>", "<uler>"} {
		if strings.Contains(string(page.body), bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	forms := pageForms(t, page.body)
	var buttons []string
	for _, f := range forms {
		buttons = append(buttons, f.Button)
		if f.Method != "post" || f.Action != "/oauth/authorize" {
			t.Errorf("form %s %s, want post /oauth/authorize", f.Method, f.Action)
		}
	}
	if diff := cmp.Diff([]string{"Authorize as @alice", `Authorize as @x"><script>alert(1)</script>`}, buttons); diff != "" {
		t.Fatalf("buttons (-want +got):\n%s", diff)
	}
	wantFields := url.Values{"response_type": {"code"}, "client_id": {ap.ClientID}, "redirect_uri": {redirect},
		"scope": {"read write"}, "state": {"st8"}, "account_id": {alice.ID}}
	if diff := cmp.Diff(wantFields, forms[0].Fields); diff != "" {
		t.Fatalf("alice's form fields (-want +got):\n%s", diff)
	}

	// Pressing alice's button: a redirect to the app with the code and state.
	r := postAuthorize(t, s, forms[0].Fields)
	if r.status != http.StatusFound {
		t.Fatalf("authorize: %d %s, want 302", r.status, r.body)
	}
	loc, err := url.Parse(r.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	code := loc.Query().Get("code")
	if loc.Host != "127.0.0.1:9" || loc.Path != "/callback" || loc.Query().Get("from") != "sandbox" || loc.Query().Get("state") != "st8" || code == "" {
		t.Fatalf("redirected to %s, want the redirect URI with its query, the code and the state", loc)
	}

	t.Run("exchange errors", func(t *testing.T) {
		tests := []struct {
			name                       string
			clientID, secret, redirect string
			code                       string
			wantStatus                 int
			wantError                  string
		}{
			{"wrong secret", ap.ClientID, "nope", redirect, code, 401, "invalid_client"},
			{"unknown client", "nobody", ap.ClientSecret, redirect, code, 401, "invalid_client"},
			{"another app's code", other.ClientID, other.ClientSecret, redirect, code, 400, "invalid_grant"},
			{"another redirect URI", ap.ClientID, ap.ClientSecret, oobRedirectURI, code, 400, "invalid_grant"},
			{"unknown code", ap.ClientID, ap.ClientSecret, redirect, "not-a-code", 400, "invalid_grant"},
			{"no code", ap.ClientID, ap.ClientSecret, redirect, "", 400, "invalid_request"},
		}
		for _, tt := range tests {
			r := exchangeCode(t, s, tt.clientID, tt.secret, tt.code, tt.redirect)
			var e tokenAnswer
			r.decode(t, &e)
			if r.status != tt.wantStatus || e.Error != tt.wantError || e.ErrorDescription == "" {
				t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.wantStatus, tt.wantError)
			}
		}
	})

	var tok tokenAnswer
	tr := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, redirect)
	tr.decode(t, &tok)
	want := tokenAnswer{AccessToken: tok.AccessToken, TokenType: "Bearer", Scope: "read write", CreatedAt: clock.Now().Unix(), RefreshToken: tok.RefreshToken}
	if diff := cmp.Diff(want, tok); diff != "" || tr.status != 200 || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("exchange: %d, token answer (-want +got):\n%s", tr.status, diff)
	}
	var me struct{ ID string }
	get(t, s.URL()+"/api/v1/accounts/verify_credentials", tok.AccessToken).decode(t, &me)
	if me.ID != alice.ID {
		t.Errorf("the code's token is account %q's, want alice's %s", me.ID, alice.ID)
	}
	if r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, redirect); r.status != 400 {
		t.Errorf("a spent code: %d, want 400", r.status)
	}

	t.Run("an expired code", func(t *testing.T) {
		code := authorizeOOB(t, s, ap, alice.ID, "read")
		clock.Advance(authCodeTTL)
		defer clock.Advance(-authCodeTTL)
		r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, oobRedirectURI)
		var e tokenAnswer
		r.decode(t, &e)
		if r.status != 400 || e.Error != "invalid_grant" {
			t.Errorf("code after ten minutes: %d %s, want 400 invalid_grant", r.status, r.body)
		}
	})
	t.Run("out of band", func(t *testing.T) {
		code := authorizeOOB(t, s, ap, alice.ID, "read")
		var tok tokenAnswer
		r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, oobRedirectURI)
		r.decode(t, &tok)
		if r.status != 200 || tok.Scope != "read" {
			t.Errorf("oob exchange: %d %s, want 200 with scope read", r.status, r.body)
		}
	})
	t.Run("refresh", func(t *testing.T) {
		refresh := func(token, id, secret string) (int, tokenAnswer) {
			var got tokenAnswer
			r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(token, id, secret), nil)
			r.decode(t, &got)
			return r.status, got
		}
		if st, got := refresh(tok.RefreshToken, "sandbox-client", "sandbox-secret"); st != 400 || got.Error != "invalid_grant" {
			t.Errorf("the app's token refreshed by the sandbox's client: %d %+v, want 400 invalid_grant", st, got)
		}
		if st, got := refresh(tok.RefreshToken, other.ClientID, other.ClientSecret); st != 400 || got.Error != "invalid_grant" {
			t.Errorf("the app's token refreshed by another app: %d %+v, want 400 invalid_grant", st, got)
		}
		st, got := refresh(tok.RefreshToken, ap.ClientID, ap.ClientSecret)
		if st != 200 || got.Scope != "read write" || got.RefreshToken == tok.RefreshToken {
			t.Errorf("the app's token refreshed by the app: %d %+v, want a rotation with scope read write", st, got)
		}
		if st, _ := refresh(alice.RefreshToken, other.ClientID, other.ClientSecret); st != 200 {
			t.Errorf("a sandbox token refreshed by a registered app: %d, want 200", st)
		}
	})
	t.Run("error pages", func(t *testing.T) {
		codes := func() int {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.codes)
		}
		before := codes()
		q := func(edit func(url.Values)) string {
			v := url.Values{"response_type": {"code"}, "client_id": {ap.ClientID}, "redirect_uri": {redirect}, "scope": {"read"}}
			edit(v)
			return v.Encode()
		}
		tests := []struct {
			name   string
			method string
			query  string
			want   string
		}{
			{"unknown client_id", "GET", q(func(v url.Values) { v.Set("client_id", "nobody") }), "Unknown client_id"},
			{"unregistered redirect_uri", "GET", q(func(v url.Values) { v.Set("redirect_uri", "http://127.0.0.1:9/elsewhere") }), "is not registered for the app"},
			{"redirect_uri required with several", "GET", q(func(v url.Values) { v.Del("redirect_uri") }), "redirect_uri is required"},
			{"scope beyond the app's", "GET", q(func(v url.Values) { v.Set("scope", "read follow") }), `&#34;follow&#34; is not among the app&#39;s scopes`},
			{"implicit grant", "GET", q(func(v url.Values) { v.Set("response_type", "token") }), "supports only"},
			{"unknown account", "POST", q(func(v url.Values) { v.Set("account_id", "7") }), "Unknown account_id"},
			{"no account", "POST", q(func(url.Values) {}), "Unknown account_id"},
			{"unknown client_id posted", "POST", q(func(v url.Values) { v.Set("client_id", "nobody"); v.Set("account_id", alice.ID) }), "Unknown client_id"},
		}
		for _, tt := range tests {
			var r response
			if tt.method == "GET" {
				r = get(t, s.URL()+"/oauth/authorize?"+tt.query, "")
			} else {
				vals, _ := url.ParseQuery(tt.query)
				r = postAuthorize(t, s, vals)
			}
			if r.status != 400 || !strings.Contains(string(r.body), tt.want) {
				t.Errorf("%s: %d, want 400 saying %q:\n%s", tt.name, r.status, tt.want, r.body)
			}
		}
		if got := codes(); got != before {
			t.Errorf("%d codes after the refused requests, want %d: a refused request issued a code", got, before)
		}
	})
}

// TestOAuth2Library runs the whole flow through golang.org/x/oauth2.
func TestOAuth2Library(t *testing.T) {
	s := start(t, Options{})
	alice := s.AddAccount("alice")
	const redirect = "http://127.0.0.1:9/cb"
	ap := registerApp(t, s, url.Values{"client_name": {"Scheduler"}, "redirect_uris": {redirect}, "scopes": {"read write"}})
	conf := &oauth2.Config{
		ClientID: ap.ClientID, ClientSecret: ap.ClientSecret, RedirectURL: redirect, Scopes: []string{"read", "write"},
		Endpoint: oauth2.Endpoint{AuthURL: s.URL() + "/oauth/authorize", TokenURL: s.URL() + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader},
	}
	page := get(t, conf.AuthCodeURL("state-1"), "")
	forms := pageForms(t, page.body)
	if len(forms) != 1 {
		t.Fatalf("%d forms on the authorize page, want 1:\n%s", len(forms), page.body)
	}
	r := postAuthorize(t, s, forms[0].Fields)
	loc, err := url.Parse(r.header.Get("Location"))
	if err != nil || loc.Query().Get("state") != "state-1" {
		t.Fatalf("redirect %q: %v", r.header.Get("Location"), err)
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	tok, err := conf.Exchange(ctx, loc.Query().Get("code"))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	hc := conf.Client(ctx, tok)
	resp, err := hc.Get(s.URL() + "/api/v1/accounts/verify_credentials")
	if err != nil {
		t.Fatal(err)
	}
	var me struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&me); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if me.ID != alice.ID {
		t.Errorf("verify_credentials = %q, want alice %s", me.ID, alice.ID)
	}
	tok.Expiry = time.Now().Add(-time.Minute)
	fresh, err := conf.TokenSource(ctx, tok).Token()
	if err != nil || fresh.AccessToken == tok.AccessToken {
		t.Errorf("refresh through oauth2: %v", err)
	}
	_, err = conf.Exchange(ctx, loc.Query().Get("code"))
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("a second Exchange of the code: %v, want invalid_grant", err)
	}
}
