package sandbox

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// shownApp is a status's "application" as served.
type shownApp struct {
	Name    string  `json:"name"`
	Website *string `json:"website"`
}

// applicationOf is the "application" of a status entity: nil when the key
// is left out, as Mastodon leaves it out for readers other than the
// status's own account. An explicit null fails the test.
func applicationOf(t *testing.T, status []byte) *shownApp {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(status, &fields); err != nil {
		t.Fatalf("decoding status %s: %v", status, err)
	}
	raw, ok := fields["application"]
	if !ok {
		return nil
	}
	if string(raw) == "null" {
		t.Errorf("application is null, want it left out as Mastodon does")
		return nil
	}
	var a shownApp
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("decoding application %s: %v", raw, err)
	}
	return &a
}

// statusIn is the entry of status id in a timeline answer.
func statusIn(t *testing.T, r response, id string) []byte {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("timeline: %d %s", r.status, r.body)
	}
	var page []json.RawMessage
	r.decode(t, &page)
	for _, e := range page {
		var st struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(e, &st); err != nil {
			t.Fatal(err)
		}
		if st.ID == id {
			return e
		}
	}
	t.Fatalf("status %s is not in the timeline %s", id, r.body)
	return nil
}

// refreshAs runs the refresh grant as a client and returns the new tokens.
func refreshAs(t *testing.T, s *Server, refresh, clientID, secret string) Account {
	t.Helper()
	r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(refresh, clientID, secret), nil)
	var ta tokenAnswer
	r.decode(t, &ta)
	if r.status != 200 || ta.AccessToken == "" {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}
	return Account{AccessToken: ta.AccessToken, RefreshToken: ta.RefreshToken}
}

// oauthToken registers the app "Scheduler" (with a website) and returns a
// token it obtained for the account through the authorization code flow,
// with the app.
func oauthToken(t *testing.T, s *Server, accountID string) (Account, appAnswer) {
	t.Helper()
	ap := registerApp(t, s, url.Values{"client_name": {"Scheduler"}, "redirect_uris": {oobRedirectURI},
		"scopes": {"read write"}, "website": {"https://scheduler.example"}})
	code := authorizeOOB(t, s, ap, accountID, "read write")
	r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, oobRedirectURI)
	var ta tokenAnswer
	r.decode(t, &ta)
	if r.status != 200 || ta.AccessToken == "" {
		t.Fatalf("code exchange: %d %s", r.status, r.body)
	}
	return Account{ID: accountID, AccessToken: ta.AccessToken, RefreshToken: ta.RefreshToken}, ap
}

// mustAddToken is AddToken, failing the test on an error.
func mustAddToken(t *testing.T, s *Server, accountID, app string) Account {
	t.Helper()
	a, err := s.AddToken(accountID, app)
	if err != nil {
		t.Fatalf("AddToken: %v", err)
	}
	return a
}

// verifiedApp reads GET /api/v1/apps/verify_credentials with the token.
func verifiedApp(t *testing.T, s *Server, token string) (int, verifiedAppJSON) {
	t.Helper()
	r := get(t, s.URL()+"/api/v1/apps/verify_credentials", token)
	var out verifiedAppJSON
	if r.status == http.StatusOK {
		r.decode(t, &out)
	}
	return r.status, out
}

// TestStatusShowsItsApplicationToItsAccountOnly posts with a token of each
// kind and reads the status back as every kind of reader.
func TestStatusShowsItsApplicationToItsAccountOnly(t *testing.T) {
	scheduler := &shownApp{Name: "Scheduler", Website: strPtr("https://scheduler.example")}
	tests := []struct {
		name  string
		token func(t *testing.T, s *Server, alice Account) Account
		want  *shownApp
	}{
		{"the sandbox's own token (AddAccount)", func(t *testing.T, s *Server, alice Account) Account { return alice },
			&shownApp{Name: "sandbox"}},
		{"another application's token (AddToken)", func(t *testing.T, s *Server, alice Account) Account {
			return mustAddToken(t, s, alice.ID, "Web")
		}, &shownApp{Name: "Web"}},
		{"a registered app's token from the OAuth flow", func(t *testing.T, s *Server, alice Account) Account {
			tok, _ := oauthToken(t, s, alice.ID)
			return tok
		}, scheduler},
		{"the sandbox's own token, refreshed", func(t *testing.T, s *Server, alice Account) Account {
			return refreshAs(t, s, alice.RefreshToken, "sandbox-client", "sandbox-secret")
		}, &shownApp{Name: "sandbox"}},
		{"another application's token, refreshed by the sandbox's client", func(t *testing.T, s *Server, alice Account) Account {
			return refreshAs(t, s, mustAddToken(t, s, alice.ID, "Web").RefreshToken, "sandbox-client", "sandbox-secret")
		}, &shownApp{Name: "Web"}},
		{"a registered app's token, refreshed by the app", func(t *testing.T, s *Server, alice Account) Account {
			tok, ap := oauthToken(t, s, alice.ID)
			return refreshAs(t, s, tok.RefreshToken, ap.ClientID, ap.ClientSecret)
		}, scheduler},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, Options{})
			alice, bob := s.AddAccount("alice"), s.AddAccount("bob")
			tok := tt.token(t, s, alice)
			tok.ID = alice.ID
			// Another token of alice's, of yet another application: the
			// application is shown to the account, whatever its token.
			phone := mustAddToken(t, s, alice.ID, "Phone")

			created := post(t, s, tok, "posted with a token", "key-1")
			st := mustStatus(t, created)
			if diff := cmp.Diff(tt.want, applicationOf(t, created.body)); diff != "" {
				t.Errorf("the create's answer: application (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, applicationOf(t, post(t, s, tok, "posted with a token", "key-1").body)); diff != "" {
				t.Errorf("the idempotent replay's answer: application (-want +got):\n%s", diff)
			}
			if got := s.Statuses(alice.ID)[0].App; got != tt.want.Name {
				t.Errorf("Statuses()[0].App = %q, want %q", got, tt.want.Name)
			}
			if code, ap := verifiedApp(t, s, tok.AccessToken); code != 200 || ap.Name != tt.want.Name || !cmp.Equal(ap.Website, tt.want.Website) {
				t.Errorf("apps/verify_credentials: %d %+v, want the app %+v", code, ap, tt.want)
			}

			readers := []struct {
				name  string
				token string
				shown bool
			}{
				{"the author, with the token that posted", tok.AccessToken, true},
				{"the author, with a token of another app", phone.AccessToken, true},
				{"another account", bob.AccessToken, false},
				{"no token", "", false},
			}
			timeline := s.URL() + "/api/v1/accounts/" + alice.ID + "/statuses"
			for _, rd := range readers {
				want := tt.want
				if !rd.shown {
					want = nil
				}
				r := get(t, s.URL()+"/api/v1/statuses/"+st.ID, rd.token)
				if r.status != 200 {
					t.Fatalf("%s: GET status: %d %s", rd.name, r.status, r.body)
				}
				if diff := cmp.Diff(want, applicationOf(t, r.body)); diff != "" {
					t.Errorf("%s: GET status: application (-want +got):\n%s", rd.name, diff)
				}
				if rd.token == "" {
					continue // the timeline needs a token
				}
				// Twice: the second answer comes from the timeline cache.
				for range 2 {
					entry := statusIn(t, get(t, timeline, rd.token), st.ID)
					if diff := cmp.Diff(want, applicationOf(t, entry)); diff != "" {
						t.Errorf("%s: timeline: application (-want +got):\n%s", rd.name, diff)
					}
				}
			}
			del := mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+st.ID, phone.AccessToken, "", nil, nil)
			if del.status != 200 {
				t.Fatalf("delete: %d %s", del.status, del.body)
			}
			if diff := cmp.Diff(tt.want, applicationOf(t, del.body)); diff != "" {
				t.Errorf("the delete's answer: application (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyAppCredentials(t *testing.T) {
	s := start(t, Options{})
	alice := s.AddAccount("alice")
	web := mustAddToken(t, s, alice.ID, "Web")
	sched, ap := oauthToken(t, s, alice.ID)
	expired := s.AddAccount("carol")
	s.ExpireAccessToken(expired.ID)
	oob := []string{oobRedirectURI}
	readWrite := []string{"read", "write"}
	tests := []struct {
		name  string
		token string
		want  verifiedAppJSON
	}{
		{"the sandbox's own token", alice.AccessToken,
			verifiedAppJSON{ID: "1", Name: "sandbox", Scopes: readWrite, RedirectURI: oobRedirectURI, RedirectURIs: oob}},
		{"another application's token", web.AccessToken,
			verifiedAppJSON{Name: "Web", Scopes: readWrite, RedirectURI: oobRedirectURI, RedirectURIs: oob}},
		{"a registered app's token", sched.AccessToken,
			verifiedAppJSON{ID: ap.ID, Name: "Scheduler", Website: strPtr("https://scheduler.example"), Scopes: readWrite, RedirectURI: oobRedirectURI, RedirectURIs: oob}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, s.URL()+"/api/v1/apps/verify_credentials", tt.token)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			var got verifiedAppJSON
			r.decode(t, &got)
			if tt.want.ID == "" { // AddToken's app: a fresh id
				tt.want.ID = got.ID
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			var raw map[string]json.RawMessage
			r.decode(t, &raw)
			for _, k := range []string{"website", "vapid_key"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("%s is left out of %s", k, r.body)
				}
			}
			for _, k := range []string{"client_id", "client_secret"} {
				if _, ok := raw[k]; ok {
					t.Errorf("%s is in the answer", k)
				}
			}
		})
	}
	if _, got := verifiedApp(t, s, web.AccessToken); got.ID == "" || got.ID == "1" || got.ID == ap.ID {
		t.Errorf("AddToken's app has id %q, want a fresh one", got.ID)
	}
	unauthorized := []struct {
		name  string
		token string
	}{
		{"no token", ""},
		{"an unknown token", "bogus"},
		{"an expired token", expired.AccessToken},
	}
	for _, tt := range unauthorized {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, s.URL()+"/api/v1/apps/verify_credentials", tt.token)
			if r.status != 401 || errorOf(t, r) != "The access token is invalid" || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%d %s (WWW-Authenticate %q), want 401 as the other authenticated routes", r.status, r.body, r.header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("a scripted fault", func(t *testing.T) {
		s.ScriptRoute(RouteVerifyAppCredentials, Fault{Kind: Fault503})
		if code, _ := verifiedApp(t, s, alice.AccessToken); code != 503 {
			t.Errorf("%d, want the scripted 503", code)
		}
	})
}

func TestAddToken(t *testing.T) {
	s := start(t, Options{})
	alice := s.AddAccount("alice")
	before := s.Accounts()
	web := mustAddToken(t, s, alice.ID, "  Web  ")
	if web.ID != alice.ID || web.Username != "alice" || web.AccessToken == "" || web.RefreshToken == "" || web.AccessToken == alice.AccessToken {
		t.Errorf("AddToken = %v, want new tokens of alice", web)
	}
	if _, ap := verifiedApp(t, s, web.AccessToken); ap.Name != "Web" {
		t.Errorf("the app is named %q, want the name trimmed", ap.Name)
	}
	if diff := cmp.Diff(before, s.Accounts()); diff != "" {
		t.Errorf("Accounts changed: another application's tokens are not the account's latest (-before +after):\n%s", diff)
	}
	refreshed := refreshAs(t, s, web.RefreshToken, "sandbox-client", "sandbox-secret")
	if diff := cmp.Diff(before, s.Accounts()); diff != "" {
		t.Errorf("Accounts changed by a refresh of another application's tokens (-before +after):\n%s", diff)
	}
	if code, _ := verifiedApp(t, s, web.AccessToken); code != 401 {
		t.Errorf("the rotated-away access token: %d, want 401", code)
	}
	if _, ap := verifiedApp(t, s, refreshed.AccessToken); ap.Name != "Web" {
		t.Errorf("the refreshed token's app is %q, want Web", ap.Name)
	}
	s.ExpireAccessToken(alice.ID)
	if code, _ := verifiedApp(t, s, refreshed.AccessToken); code != 401 {
		t.Errorf("after ExpireAccessToken: %d, want 401", code)
	}

	errs := []struct {
		name, account, app, want string
	}{
		{"an unknown account", "999", "Web", `no account "999"`},
		{"a blank name", alice.ID, "  ", "the app name must be 1 to 60 characters"},
		{"a name too long", alice.ID, strings.Repeat("é", 61), "the app name must be 1 to 60 characters"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.AddToken(tt.account, tt.app); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AddToken(%q, %q) = %v, want an error containing %q", tt.account, tt.app, err, tt.want)
			}
		})
	}
	if _, err := s.AddToken(alice.ID, strings.Repeat("é", 60)); err != nil {
		t.Errorf("a name of 60 characters: %v", err)
	}
}

func TestControlTokens(t *testing.T) {
	s := start(t, Options{})
	alice := s.AddAccount("alice")
	u := s.URL() + "/sandbox/tokens"
	r := mustSend(t, http.MethodPost, u, "", jsonType, []byte(`{"account_id":"`+alice.ID+`","app":"Web"}`), nil)
	if r.status != http.StatusCreated || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("POST /sandbox/tokens: %d %s (Cache-Control %q)", r.status, r.body, r.header.Get("Cache-Control"))
	}
	var got controlTokenJSON
	r.decode(t, &got)
	if got.ID != alice.ID || got.Username != "alice" || got.App != "Web" || got.AccessToken == "" || got.RefreshToken == "" {
		t.Errorf("answer %+v", got)
	}
	if _, ap := verifiedApp(t, s, got.AccessToken); ap.Name != "Web" {
		t.Errorf("the answered token's app is %q, want Web", ap.Name)
	}
	if app := applicationOf(t, post(t, s, Account{AccessToken: got.AccessToken}, "by hand", "").body); app == nil || app.Name != "Web" {
		t.Errorf("a status posted with it shows %+v, want Web", app)
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		wantError   string
	}{
		{"an unknown account", jsonType, `{"account_id":"999","app":"Web"}`, 404, `account_id: no account "999"`},
		{"no app", jsonType, `{"account_id":"` + alice.ID + `"}`, 400, `app: must be 1 to 60 characters, got ""`},
		{"an unknown field", jsonType, `{"account_id":"` + alice.ID + `","app":"Web","scopes":"read"}`, 400, `body: unknown field "scopes"`},
		{"a form", formType, `account_id=1&app=Web`, 415, "body: send JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSend(t, http.MethodPost, u, "", tt.contentType, []byte(tt.body), nil)
			if r.status != tt.wantStatus || !strings.Contains(errorOf(t, r), tt.wantError) {
				t.Errorf("%d %s, want %d with an error containing %q", r.status, r.body, tt.wantStatus, tt.wantError)
			}
		})
	}
}

// TestRestartKeepsApplications: every token keeps its application and
// every status the application it was posted with across a restart.
func TestRestartKeepsApplications(t *testing.T) {
	clock := newClock()
	opts := Options{DataDir: t.TempDir(), Now: clock.Now}
	first := openStarted(t, opts)
	alice, bob := first.AddAccount("alice"), first.AddAccount("bob")
	web := mustAddToken(t, first, alice.ID, "Web")
	sched, ap := oauthToken(t, first, alice.ID)
	type posted struct {
		token Account
		id    string
		want  *shownApp
	}
	statuses := []posted{
		{token: alice, want: &shownApp{Name: "sandbox"}},
		{token: web, want: &shownApp{Name: "Web"}},
		{token: sched, want: &shownApp{Name: "Scheduler", Website: strPtr("https://scheduler.example")}},
	}
	for i := range statuses {
		statuses[i].id = mustStatus(t, post(t, first, statuses[i].token, "post "+statuses[i].want.Name, "")).ID
	}
	injected := first.InjectStatus(alice.ID, "injected")
	statuses = append(statuses, posted{token: alice, id: injected.ID, want: &shownApp{Name: "sandbox"}})
	// A refresh before the restart: the rotated tokens keep the app.
	webNow := refreshAs(t, first, web.RefreshToken, "sandbox-client", "sandbox-secret")
	mustClose(t, first)

	s := openStarted(t, opts)
	for _, p := range statuses {
		if diff := cmp.Diff(p.want, applicationOf(t, get(t, s.URL()+"/api/v1/statuses/"+p.id, alice.AccessToken).body)); diff != "" {
			t.Errorf("status %s read by its account after the restart: application (-want +got):\n%s", p.id, diff)
		}
		if app := applicationOf(t, get(t, s.URL()+"/api/v1/statuses/"+p.id, bob.AccessToken).body); app != nil {
			t.Errorf("status %s read by another account after the restart shows %+v", p.id, app)
		}
	}
	tokens := []struct {
		name  string
		token string
		want  string
	}{
		{"the sandbox's own token", alice.AccessToken, "sandbox"},
		{"another application's token, refreshed before the restart", webNow.AccessToken, "Web"},
		{"a registered app's token", sched.AccessToken, "Scheduler"},
	}
	for _, tt := range tokens {
		if code, got := verifiedApp(t, s, tt.token); code != 200 || got.Name != tt.want {
			t.Errorf("%s after the restart: %d %q, want %q", tt.name, code, got.Name, tt.want)
		}
	}
	// Refreshes after the restart keep the app too.
	webLater := refreshAs(t, s, webNow.RefreshToken, "sandbox-client", "sandbox-secret")
	schedLater := refreshAs(t, s, sched.RefreshToken, ap.ClientID, ap.ClientSecret)
	for token, want := range map[string]string{webLater.AccessToken: "Web", schedLater.AccessToken: "Scheduler"} {
		st := post(t, s, Account{AccessToken: token}, "after the restart "+want, "")
		if app := applicationOf(t, st.body); app == nil || app.Name != want {
			t.Errorf("a status posted after the restart with a refreshed %s token shows %+v", want, app)
		}
	}
}

// TestJournalWithoutApplications: a journal written before tokens and
// statuses had applications loads with every token and status the
// sandbox's own, as they were shown then, even a token an app obtained
// through the OAuth flow.
func TestJournalWithoutApplications(t *testing.T) {
	dir := t.TempDir()
	journal := strings.Join([]string{
		`{"op":"header","header":{"format":"oncepost-sandbox-journal","version":1}}`,
		`{"op":"account","account":{"id":"100","username":"old","created_at":"2025-03-01T12:00:00Z","tokens":{"access":"old-access","refresh":"old-refresh","scope":"read write"}}}`,
		`{"op":"app","app":{"id":"101","name":"Scheduler","redirect_uris":["urn:ietf:wg:oauth:2.0:oob"],"scopes":["read","write"],"client_id":"cid","client_secret":"csecret","created_at":"2025-03-01T12:00:00Z"}}`,
		`{"op":"grant","grant":{"account":"100","tokens":{"access":"app-access","refresh":"app-refresh","client_id":"cid","scope":"read write"}}}`,
		`{"op":"status","status":{"id":"200","account":"100","text":"an old post","content":"<p>an old post</p>","visibility":"public","created_at":"2025-03-01T12:00:00Z","fingerprint":"f"}}`,
	}, "\n") + "\n"
	if err := os.WriteFile(journalPath(dir), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStarted(t, Options{DataDir: dir})
	if got := s.Statuses("100"); len(got) != 1 || got[0].App != "sandbox" {
		t.Fatalf("Statuses = %+v, want the old post of the sandbox's app", got)
	}
	if diff := cmp.Diff(&shownApp{Name: "sandbox"}, applicationOf(t, get(t, s.URL()+"/api/v1/statuses/200", "old-access").body)); diff != "" {
		t.Errorf("the old post: application (-want +got):\n%s", diff)
	}
	for _, token := range []string{"old-access", "app-access"} {
		if code, got := verifiedApp(t, s, token); code != 200 || got.Name != "sandbox" {
			t.Errorf("apps/verify_credentials with %s: %d %q, want sandbox", token, code, got.Name)
		}
	}
}
