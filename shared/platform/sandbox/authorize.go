package sandbox

import (
	"crypto/rand"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxFormBody bounds the body of the authorize form.
const maxFormBody = 1 << 20

// authorizeRequest is a checked authorization request.
type authorizeRequest struct {
	clientID    string
	appName     string
	website     string
	redirectURI string
	scope       string
	state       string
}

// checkAuthorizeLocked checks the parameters of an authorization request
// against the registered app, as Doorkeeper does: a known client_id, a
// redirect_uri registered for it (optional when it has only one), a scope
// within the app's (default "read"). It returns the message of the 400
// page on failure.
func (s *Server) checkAuthorizeLocked(form url.Values) (authorizeRequest, string) {
	if rt := form.Get("response_type"); rt != "" && rt != "code" {
		return authorizeRequest{}, fmt.Sprintf("response_type %q is not supported: the sandbox's authorization server supports only \"code\".", rt)
	}
	clientID := form.Get("client_id")
	a := s.apps[clientID]
	if a == nil {
		return authorizeRequest{}, "Unknown client_id: no app is registered with it. Register one with POST /api/v1/apps."
	}
	req := authorizeRequest{clientID: clientID, appName: a.name, website: a.website, state: form.Get("state")}
	req.redirectURI = form.Get("redirect_uri")
	switch {
	case req.redirectURI == "" && len(a.redirectURIs) == 1:
		req.redirectURI = a.redirectURIs[0]
	case req.redirectURI == "":
		return authorizeRequest{}, "redirect_uri is required: the app has several redirect URIs (" + strings.Join(a.redirectURIs, ", ") + ")."
	case !slices.Contains(a.redirectURIs, req.redirectURI):
		return authorizeRequest{}, fmt.Sprintf("The redirect_uri %q is not registered for the app %q (registered: %s).",
			req.redirectURI, a.name, strings.Join(a.redirectURIs, ", "))
	}
	scopes := strings.Fields(form.Get("scope"))
	if len(scopes) == 0 {
		scopes = []string{"read"}
	}
	for _, sc := range scopes {
		if !slices.Contains(a.scopes, sc) {
			return authorizeRequest{}, fmt.Sprintf("The requested scope is invalid, unknown, or malformed: %q is not among the app's scopes (%s).",
				sc, strings.Join(a.scopes, " "))
		}
	}
	req.scope = strings.Join(scopes, " ")
	return req, ""
}

// authorizePage is GET /oauth/authorize: the sandbox has no login, so the
// page lists its accounts, each with a button that authorizes the app as
// that account.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	req, msg := s.checkAuthorizeLocked(r.URL.Query())
	var accounts []authorizeAccount
	if msg == "" {
		for _, a := range s.accountOrder {
			accounts = append(accounts, authorizeAccount{ID: a.id, Username: a.username})
		}
	}
	s.mu.Unlock()
	if msg != "" {
		writePage(w, http.StatusBadRequest, errorPageTemplate, errorPage{Title: "The authorization request is invalid", Message: msg}, s)
		return
	}
	writePage(w, http.StatusOK, authorizeTemplate, authorizeView{
		AppName: req.appName, Website: req.website, ClientID: req.clientID, RedirectURI: req.redirectURI,
		Scope: req.scope, State: req.state, Accounts: accounts,
	}, s)
}

// authorize is POST /oauth/authorize, the authorize page's buttons: it
// issues a single-use code for the chosen account and redirects to the
// app's redirect_uri with it (and the state), or shows it for the
// out-of-band redirect URI.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		writePage(w, http.StatusBadRequest, errorPageTemplate, errorPage{Title: "The authorization request is invalid", Message: "The form could not be read."}, s)
		return
	}
	s.mu.Lock()
	req, msg := s.checkAuthorizeLocked(r.PostForm)
	accountID := r.PostForm.Get("account_id")
	if msg == "" && s.accounts[accountID] == nil {
		msg = fmt.Sprintf("Unknown account_id %q: no sandbox account has it.", accountID)
	}
	if msg != "" {
		s.mu.Unlock()
		writePage(w, http.StatusBadRequest, errorPageTemplate, errorPage{Title: "The authorization request is invalid", Message: msg}, s)
		return
	}
	code := rand.Text()
	ac := &authCode{clientID: req.clientID, redirectURI: req.redirectURI, scope: req.scope, accountID: accountID,
		expiresAt: s.opts.Now().Add(authCodeTTL)}
	s.codes[code] = ac
	s.journalLocked(record{Op: opCode, Code: &codeRec{
		Code: code, ClientID: ac.clientID, RedirectURI: ac.redirectURI, Scope: ac.scope, Account: ac.accountID, ExpiresAt: ac.expiresAt,
	}})
	s.mu.Unlock()
	if err := s.sync(); err != nil {
		s.log.Error("sandbox: saving an authorization code failed", "err", err)
		writePage(w, http.StatusInternalServerError, errorPageTemplate, errorPage{Title: "The sandbox could not save the authorization", Message: errSaveFailed}, s)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if req.redirectURI == oobRedirectURI {
		writePage(w, http.StatusOK, codeTemplate, codeView{AppName: req.appName, Code: code}, s)
		return
	}
	u, err := url.Parse(req.redirectURI)
	if err != nil {
		// Registered URIs were checked to parse (checkRedirectURI).
		writePage(w, http.StatusInternalServerError, errorPageTemplate, errorPage{Title: "Bad redirect URI", Message: "The app's redirect URI does not parse."}, s)
		return
	}
	q := u.Query()
	q.Set("code", code)
	if req.state != "" {
		q.Set("state", req.state)
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

type authorizeAccount struct {
	ID       string
	Username string
}

type authorizeView struct {
	AppName     string
	Website     string
	ClientID    string
	RedirectURI string
	Scope       string
	State       string
	Accounts    []authorizeAccount
}

type codeView struct {
	AppName string
	Code    string
}

type errorPage struct {
	Title   string
	Message string
}

// pageStyle is the style of the OAuth pages.
const pageStyle = `<style>
body { font-family: sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }
ul { list-style: none; padding: 0; }
li { margin: .5rem 0; }
code { font-size: 1.2rem; background: #eee; padding: .25rem .5rem; }
.meta { color: #555; font-size: .9rem; }
</style>`

var authorizeTemplate = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Authorize {{.AppName}} · oncepost sandbox</title>
` + pageStyle + `
</head>
<body>
<h1>Authorize {{.AppName}}</h1>
<p>The app <strong>{{.AppName}}</strong>{{with .Website}} (<a href="{{.}}">{{.}}</a>){{end}} requests access to an account, with the scope <code>{{.Scope}}</code>.
The sandbox has no login: choose the account to authorize it as.</p>
{{if .Accounts}}<ul>
{{range .Accounts}}<li><form method="post" action="/oauth/authorize">
<input type="hidden" name="response_type" value="code">
<input type="hidden" name="client_id" value="{{$.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{$.RedirectURI}}">
<input type="hidden" name="scope" value="{{$.Scope}}">
{{with $.State}}<input type="hidden" name="state" value="{{.}}">
{{end}}<input type="hidden" name="account_id" value="{{.ID}}">
<button type="submit">Authorize as @{{.Username}}</button>
</form></li>
{{end}}</ul>{{else}}<p>The sandbox has no accounts yet: create one with POST /sandbox/accounts.</p>{{end}}
<p class="meta">After authorizing, the browser goes to {{.RedirectURI}}</p>
</body>
</html>
`))

var codeTemplate = template.Must(template.New("code").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Authorization code · oncepost sandbox</title>
` + pageStyle + `
</head>
<body>
<h1>Authorization code</h1>
<p>Copy this code and paste it into {{.AppName}}:</p>
<p><code id="authorization-code">{{.Code}}</code></p>
<p class="meta">It can be used once, within ten minutes.</p>
</body>
</html>
`))

var errorPageTemplate = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}} · oncepost sandbox</title>
` + pageStyle + `
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
</body>
</html>
`))

// writePage renders an HTML page.
func writePage(w http.ResponseWriter, status int, t *template.Template, data any, s *Server) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		s.log.Error("sandbox: rendering a page failed", "page", t.Name(), "err", err)
		http.Error(w, "sandbox: rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.String())
}
