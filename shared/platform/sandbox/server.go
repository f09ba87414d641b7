// Package sandbox is a Mastodon-compatible HTTP server for tests,
// benchmarks, the local demo and the chaos drill (DESIGN §5).
//
// It speaks the parts of the Mastodon REST API that oncepost's Mastodon
// adapter uses — statuses create (with Idempotency-Key), read, source and
// delete, account statuses with max_id/since_id/min_id pagination, async
// media upload, the account's and the app's verify_credentials, instance
// and the OAuth refresh grant — with Mastodon's response shapes and error
// bodies. A seeded fault plan (scripted per route, or random on status
// creates) injects the failures the ledger must survive: delays around the
// commit, dropped requests, responses lost after the commit, 500 after
// commit, 503, 429 and 401. The server
// counts duplicate posts itself (same content fingerprint committed twice for
// one account), records every status create with the fault it suffered and
// its outcome (Creates), and shows every account's timeline as a plain HTML
// page at /.
//
// Every access token belongs to an application, as on Mastodon: the app
// that obtained it through the OAuth flow, the application named by
// AddToken, or the sandbox's own application, "sandbox", for the tokens it
// issues itself (AddAccount, RestoreAccount, POST /sandbox/accounts). A
// status records the application of the token that posted it and shows it
// ("application": {"name", "website"}) to its own account only, as
// Mastodon does; GET /api/v1/apps/verify_credentials answers the token's
// application.
//
// Status texts are stored and rendered as Mastodon stores and renders them
// (render.go names the Mastodon source followed): stripped, mentions of
// sandbox accounts rewritten to their usernames, "content" HTML with links
// shortened, mentions and hashtags linked, paragraphs and <br />.
//
// New keeps everything in memory. Open with Options.DataDir keeps the state
// in an append-only journal in that directory instead (persist.go), so a
// sandbox run as a separate process survives restarts: every change is on
// disk before the response that reports it is written.
//
// Besides the API a client uses, the server offers Mastodon's OAuth app
// flow (POST /api/v1/apps, GET and POST /oauth/authorize, the
// authorization_code and refresh_token grants of POST /oauth/token; the
// sandbox has no login, the authorize page lets you pick the account) and a
// control API for tests that run it as a separate process (control.go):
// POST /sandbox/accounts, POST /sandbox/tokens, POST /sandbox/faults,
// GET /sandbox/statuses, GET /sandbox/creates and GET /sandbox/stats. The
// control API is unauthenticated: the server only ever binds a loopback
// address (127.0.0.1 or ::1, see Options.Addr), and the control endpoints
// refuse requests whose Host is not a loopback name, against DNS
// rebinding. Named random fault profiles (Profile) give a standalone
// sandbox realistic failures without code.
package sandbox

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"oncepost/shared/platform"
)

// Options configures a Server. The zero value is a well-behaved Mastodon
// instance with no faults.
type Options struct {
	// DisableIdempotency switches Idempotency-Key support off, so tests can
	// prove the client's ledger alone prevents duplicates.
	DisableIdempotency bool
	// TokenTTL is how long access tokens stay valid (401 afterwards); 0
	// means they never expire, as on Mastodon.
	TokenTTL time.Duration
	// Now is the clock (token expiry, idempotency window, created_at and
	// status ids); default time.Now.
	Now func() time.Time
	// Seed seeds the random fault plan: the same seed and the same sequence
	// of status creates give the same faults.
	Seed int64
	// Random are probabilistic faults on POST /api/v1/statuses.
	Random RandomFaults
	// MaxCharacters is the status text limit; default 500. Text is counted
	// in grapheme clusters, every link counting as 23, as on Mastodon.
	MaxCharacters int
	// MaxMediaAttachments is the most media on one status; default 4.
	MaxMediaAttachments int
	// ImageSizeLimit is the largest image the instance says it takes
	// (configuration.media_attachments.image_size_limit); default 16 MB.
	ImageSizeLimit int64
	// MediaProcessingPolls is how many GET /api/v1/media/:id answer 206
	// before the media is processed and answers 200; default 1. A negative
	// value means media is processed at upload (POST /api/v2/media answers
	// 200 with the url set, as Mastodon does for small images).
	MediaProcessingPolls int
	// ClientID and ClientSecret are the OAuth client the refresh grant
	// accepts; defaults "sandbox-client" and "sandbox-secret".
	ClientID, ClientSecret string
	// Logger receives one debug line per request (route, status, fault)
	// and never tokens or post text; default discards.
	Logger *slog.Logger
	// DataDir, when set, is the directory Open keeps the server's state in
	// (created with mode 0700 if missing): a server opened again on it has
	// every account, token, status, media, idempotency key, OAuth app and
	// code, counter and create record of the previous run. Scripted faults
	// are not kept. New refuses it: use Open.
	DataDir string
	// Addr is the address Start listens on, "127.0.0.1:PORT" or
	// "[::1]:PORT" (port 0 picks a free one); default "127.0.0.1:0". Any
	// other host, including "localhost" and the unspecified address, is
	// refused: the control API has no authentication.
	Addr string
}

// RandomFaults are probabilistic faults drawn for every status create from
// the seeded generator. They apply only when no scripted fault is queued.
type RandomFaults struct {
	// DelayRate is the probability of waiting Delay before committing. The
	// commit happens even if the client has gone away meanwhile.
	DelayRate float64
	// Delay is the wait applied with probability DelayRate.
	Delay time.Duration
	// Loss is the probability of dropping the request: the connection is
	// closed and nothing is committed.
	Loss float64
	// ResponseLoss is the probability of committing and then closing the
	// connection without any response.
	ResponseLoss float64
}

// FaultKind names one injected failure.
type FaultKind string

const (
	// FaultDelayBeforeCommit waits Fault.Delay, commits (even if the client
	// disconnected meanwhile: the client gives up at 10s, the server
	// commits at 11s), then responds if it still can.
	FaultDelayBeforeCommit FaultKind = "delay-before-commit"
	// FaultDelayAfterCommit commits, waits Fault.Delay, then responds.
	FaultDelayAfterCommit FaultKind = "delay-after-commit"
	// FaultDropRequest closes the connection without reading the request
	// or committing anything.
	FaultDropRequest FaultKind = "drop-request"
	// FaultDropResponse commits, then closes the connection without any
	// response.
	FaultDropResponse FaultKind = "drop-response"
	// Fault500AfterCommit commits, then answers 500 {"error":"..."}.
	Fault500AfterCommit FaultKind = "500-after-commit"
	// Fault503 answers 503 before committing anything. A client cannot tell
	// it from a proxy's 503 after forwarding, so on a write oncepost's
	// adapter treats it as ambiguous.
	Fault503 FaultKind = "503"
	// Fault429 answers 429 before committing anything, with Retry-After in
	// whole seconds rounded up from Fault.RetryAfter (default 1s).
	Fault429 FaultKind = "429"
	// Fault401 answers 401 {"error":"The access token is invalid"} before
	// committing anything.
	Fault401 FaultKind = "401"
)

// Fault is one scripted failure, consumed by one request.
type Fault struct {
	// Kind selects the failure.
	Kind FaultKind
	// Delay is the wait of the delay kinds.
	Delay time.Duration
	// RetryAfter is the Retry-After of Fault429; default 1s.
	RetryAfter time.Duration
}

// The API routes, named as ScriptRoute accepts them.
const (
	// RouteCreateStatus creates a status; the route Script and the random
	// faults apply to.
	RouteCreateStatus = "POST /api/v1/statuses"
	// RouteGetStatus reads one status.
	RouteGetStatus = "GET /api/v1/statuses/:id"
	// RouteStatusSource reads a status's plain text.
	RouteStatusSource = "GET /api/v1/statuses/:id/source"
	// RouteDeleteStatus deletes a status.
	RouteDeleteStatus = "DELETE /api/v1/statuses/:id"
	// RouteAccountStatuses lists an account's statuses, newest first.
	RouteAccountStatuses = "GET /api/v1/accounts/:id/statuses"
	// RouteVerifyCredentials returns the token owner's account.
	RouteVerifyCredentials = "GET /api/v1/accounts/verify_credentials"
	// RouteUploadMedia uploads an attachment.
	RouteUploadMedia = "POST /api/v2/media"
	// RouteGetMedia polls an attachment's processing.
	RouteGetMedia = "GET /api/v1/media/:id"
	// RouteInstance describes the instance and its limits (v1 shape).
	RouteInstance = "GET /api/v1/instance"
	// RouteInstanceV2 describes the instance and its limits (v2 shape).
	RouteInstanceV2 = "GET /api/v2/instance"
	// RouteOAuthToken is the OAuth token endpoint (authorization code and
	// refresh grants).
	RouteOAuthToken = "POST /oauth/token"
	// RouteCreateApp registers an OAuth application.
	RouteCreateApp = "POST /api/v1/apps"
	// RouteVerifyAppCredentials returns the application the token belongs
	// to.
	RouteVerifyAppCredentials = "GET /api/v1/apps/verify_credentials"
)

// Account is one sandbox user and an OAuth credential of it: the one
// AddAccount or AddToken issued or, from Accounts, the latest the sandbox
// issued on its own application (not through an app's authorization code,
// nor by AddToken).
type Account struct {
	ID           string
	Username     string
	AccessToken  string
	RefreshToken string
}

// String hides the tokens.
func (a Account) String() string {
	return fmt.Sprintf("sandbox.Account{ID:%s Username:%s tokens:redacted}", a.ID, a.Username)
}

// GoString hides the tokens from %#v as well.
func (a Account) GoString() string { return a.String() }

// Status is a committed post as the sandbox stores it.
type Status struct {
	// ID is a decimal snowflake-like id; later statuses have numerically
	// larger ids.
	ID        string
	AccountID string
	Username  string
	// Text is the plain text as stored and served by the source endpoint:
	// as posted, stripped of surrounding white space, with every mention of
	// a sandbox account rewritten to "@" + its username, as Mastodon's
	// ProcessMentionsService does ("@ALICE" is stored as "@alice").
	Text string
	// Content is the HTML Mastodon would serve as "content".
	Content    string
	Visibility string
	CreatedAt  time.Time
	// MediaIDs are the attachments in display order.
	MediaIDs []string
	// MediaSHA256 are the hex SHA-256s of the attachments' bytes, in the
	// same order as MediaIDs.
	MediaSHA256 []string
	// Fingerprint is platform.Fingerprint(Text, MediaSHA256).
	Fingerprint string
	// IdempotencyKey is the Idempotency-Key header of the create, or "".
	IdempotencyKey string
	// InReplyToID is the id of the status this one replies to (the
	// create's in_reply_to_id), "" when it is not a reply.
	InReplyToID string
	// Duplicate is true when the same fingerprint had already been
	// committed for the account.
	Duplicate bool
	// Injected is true for statuses made by InjectStatus.
	Injected bool
	// App is the name of the application the status was posted with: the
	// application of the token that created it ("sandbox" for the
	// sandbox's own tokens and for InjectStatus). Mastodon shows it, as
	// the status's "application", to the status's own account only
	// (https://docs.joinmastodon.org/entities/Status/#application).
	App string
}

// Stats are the server's counters, also served at GET /sandbox/stats.
type Stats struct {
	// CreateRequests counts POST /api/v1/statuses received, faulted ones
	// included.
	CreateRequests int `json:"create_requests"`
	// Committed counts statuses stored, InjectStatus included.
	Committed int `json:"committed"`
	// IdempotentReplays counts creates answered from the Idempotency-Key
	// store without committing.
	IdempotentReplays int `json:"idempotent_replays"`
	// Duplicates counts commits whose fingerprint had already been
	// committed for the same account (deleted statuses included).
	Duplicates int `json:"duplicates"`
	// Deleted counts statuses deleted through the API.
	Deleted int `json:"deleted"`
}

// Server is the sandbox. Create it with New, or Open to keep its state on
// disk; it is safe for concurrent use.
type Server struct {
	opts   Options
	log    *slog.Logger
	router http.Handler

	mu           sync.Mutex
	rng          *mrand.Rand
	lastID       uint64
	accounts     map[string]*account
	accountOrder []*account
	byUsername   map[string]*account // lower-cased username → first account with it
	access       map[string]*accessToken
	refresh      map[string]refreshGrant // refresh token → its grant
	statuses     map[uint64]*status
	media        map[string]*media
	idempotency  map[string]idempotencyEntry // account id + "\x00" + key
	fingerprints map[string]map[string]bool  // account id → fingerprints ever committed
	scripts      map[string][]Fault
	stats        Stats
	creates      []CreateRecord
	apps         map[string]*app      // client id → registered OAuth app
	codes        map[string]*authCode // authorization code → what it grants
	// textScripts are ScriptText's faults, by status text.
	textScripts map[string][]Fault
	// ownApp is the sandbox's own application, the one of the tokens it
	// issues itself; it is not in apps.
	ownApp *app

	// j is the journal of a server opened with a DataDir, nil otherwise.
	// Changes are added to it with s.mu held, in the order they are made,
	// and made durable by s.sync before any response reports them.
	j *journal
	// testHookDelay, when set, is called as a request starts a fault delay
	// (its body has been read), so tests can act without sleeping.
	testHookDelay func()

	life      sync.Mutex
	closing   bool
	inflight  sync.WaitGroup
	done      chan struct{}
	httpSrv   *http.Server
	listener  net.Listener
	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

type account struct {
	id        string
	username  string
	createdAt time.Time
	statuses  []*status // in commit order, deleted ones included
	live      int       // statuses not deleted
	// access and refresh are the latest tokens of the sandbox's own
	// application issued for the account (Accounts); they may since have
	// been revoked or rotated.
	access, refresh string
}

type accessToken struct {
	accountID string
	expiresAt time.Time // zero: never
	revoked   bool
	// app is the application the token was issued to; never nil.
	app *app
}

// refreshGrant is what a refresh token stands for: the account, the access
// token issued with it (which the rotation revokes), the OAuth client it
// was issued to ("" for the tokens the sandbox issues itself, which any
// known client may refresh), its scope, and the application the tokens
// belong to, which the rotation keeps.
type refreshGrant struct {
	accountID   string
	accessToken string
	clientID    string
	scope       string
	app         *app
}

// defaultScope is the scope of the tokens the sandbox issues itself
// (AddAccount, RestoreAccount, AddToken).
const defaultScope = "read write"

// The sandbox's own application, the one of the tokens it issues itself.
// Its name is what every status showed before tokens had applications.
const (
	ownAppID   = "1"
	ownAppName = "sandbox"
)

type status struct {
	Status
	num     uint64
	deleted bool
	// app is the application of the token that created the status; never
	// nil.
	app *app
	// list caches the status as served in account timelines, rendered for
	// a base URL, [0] for other readers and [1] for the status's own
	// account (which also sees its application). Timelines are read on
	// every publish (pre-publish dedup), and a status never changes once
	// committed; only the embedded account's statuses_count is frozen at
	// first rendering.
	list [2]listCache
}

// listCache is one rendering of a status for timelines.
type listCache struct {
	json []byte
	base string
}

type media struct {
	id          string
	accountID   string
	data        []byte
	contentType string
	description string
	sha256      string
	pollsLeft   int
	statusID    string // set once attached
}

type idempotencyEntry struct {
	statusID uint64
	expires  time.Time
}

// idempotencyTTL is how long Mastodon remembers an Idempotency-Key.
const idempotencyTTL = time.Hour

// New returns an in-memory server configured by opts. Call Start to serve
// it on a loopback port, or mount Handler yourself. It panics when
// opts.DataDir is set, which only Open can honour.
func New(opts Options) *Server {
	if opts.DataDir != "" {
		panic("sandbox: New: Options.DataDir needs Open")
	}
	return newServer(opts)
}

// newServer is New without the DataDir check: the empty server Open loads
// the journal into.
func newServer(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxCharacters <= 0 {
		opts.MaxCharacters = 500
	}
	if opts.ImageSizeLimit <= 0 {
		opts.ImageSizeLimit = 16 << 20
	}
	if opts.MaxMediaAttachments <= 0 {
		opts.MaxMediaAttachments = 4
	}
	if opts.MediaProcessingPolls == 0 {
		opts.MediaProcessingPolls = 1
	}
	if opts.ClientID == "" {
		opts.ClientID = "sandbox-client"
	}
	if opts.ClientSecret == "" {
		opts.ClientSecret = "sandbox-secret"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seed := uint64(opts.Seed)
	s := &Server{
		opts:         opts,
		log:          log,
		rng:          mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		accounts:     map[string]*account{},
		byUsername:   map[string]*account{},
		access:       map[string]*accessToken{},
		refresh:      map[string]refreshGrant{},
		statuses:     map[uint64]*status{},
		media:        map[string]*media{},
		idempotency:  map[string]idempotencyEntry{},
		fingerprints: map[string]map[string]bool{},
		scripts:      map[string][]Fault{},
		textScripts:  map[string][]Fault{},
		apps:         map[string]*app{},
		codes:        map[string]*authCode{},
		ownApp: &app{
			id: ownAppID, name: ownAppName, redirectURIs: []string{oobRedirectURI},
			scopes: strings.Fields(defaultScope),
		},
		done: make(chan struct{}),
	}
	s.router = s.routes()
	return s
}

// defaultAddr is where Start listens without Options.Addr.
const defaultAddr = "127.0.0.1:0"

// Start listens on Options.Addr (default 127.0.0.1 on a free port) and
// serves in the background. It refuses an address whose host is not
// 127.0.0.1 or ::1.
func (s *Server) Start() error {
	addr := s.opts.Addr
	if addr == "" {
		addr = defaultAddr
	}
	if err := checkLoopbackAddr(addr); err != nil {
		return fmt.Errorf("sandbox: start: %w", err)
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closing {
		return errors.New("sandbox: start: server is closed")
	}
	if s.listener != nil {
		return errors.New("sandbox: start: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sandbox: start: listen on %s: %w", addr, err)
	}
	s.listener = ln
	s.httpSrv = &http.Server{
		Handler:           s.router,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.serveDone = make(chan struct{})
	go func() {
		defer close(s.serveDone)
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("sandbox: serve stopped", "err", err)
		}
	}()
	s.log.Info("sandbox: listening", "url", s.urlLocked())
	return nil
}

// checkLoopbackAddr accepts "HOST:PORT" where HOST is the IP literal
// 127.0.0.1 or ::1 and PORT a number (0 for a free port).
func checkLoopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w (want 127.0.0.1:PORT or [::1]:PORT)", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || (ip != netip.AddrFrom4([4]byte{127, 0, 0, 1}) && ip != netip.IPv6Loopback()) {
		return fmt.Errorf("address %q: host %q is not 127.0.0.1 or ::1; the sandbox's control API is unauthenticated, so it binds a loopback IP literal only", addr, host)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("address %q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// URL is the base URL, "http://127.0.0.1:PORT", or "" before Start.
func (s *Server) URL() string {
	s.life.Lock()
	defer s.life.Unlock()
	return s.urlLocked()
}

func (s *Server) urlLocked() string {
	if s.listener == nil {
		return ""
	}
	return "http://" + s.listener.Addr().String()
}

// Close stops the listener, closes every connection and waits for the
// handlers in flight. Pending fault delays are cut short: a delayed commit
// happens at once, so Stats after Close are final. With a DataDir, every
// change, such a commit included, is on disk when Close returns, and the
// journal is closed: an error saving any change since Open is returned
// here too. Close is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.life.Lock()
		s.closing = true
		srv, serveDone := s.httpSrv, s.serveDone
		s.life.Unlock()
		close(s.done)
		var errs []error
		if srv != nil {
			if err := srv.Close(); err != nil {
				errs = append(errs, err)
			}
			<-serveDone
		}
		s.inflight.Wait()
		if s.j != nil {
			if err := s.j.close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sandbox: close: %w", err)
		}
	})
	return s.closeErr
}

// Handler is the server's HTTP handler, for mounting elsewhere (for
// example in httptest.NewServer). Status and account URLs then use the
// request's Host.
func (s *Server) Handler() http.Handler { return s.router }

// enter registers a handler in flight; false once Close has begun.
func (s *Server) enter() bool {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closing {
		return false
	}
	s.inflight.Add(1)
	return true
}

// sleep waits d, or less if the server is closing.
func (s *Server) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.done:
	}
}

// AddAccount creates an account with a fresh access and refresh token.
// Every call creates a new account, even for a username already taken.
// With a DataDir the account is on disk when AddAccount returns; a failure
// to save it is logged and returned by Close.
func (s *Server) AddAccount(username string) Account {
	a, err := s.addAccount(username)
	if err != nil {
		s.log.Error("sandbox: saving a new account failed", "account", a.ID, "err", err)
	}
	return a
}

// addAccount is AddAccount, returning the error of saving the account.
func (s *Server) addAccount(username string) (Account, error) {
	s.mu.Lock()
	now := s.opts.Now()
	a := &account{id: s.nextIDLocked(now), username: username, createdAt: now}
	s.addAccountLocked(a)
	access, refresh := s.issueTokensLocked(a.id, now, "", defaultScope, s.ownApp)
	s.journalAccountLocked(a)
	s.mu.Unlock()
	return Account{ID: a.id, Username: username, AccessToken: access, RefreshToken: refresh}, s.sync()
}

// Accounts returns every account, in creation order, with the latest
// access and refresh token the sandbox issued for it on its own
// application (AddAccount, RestoreAccount, POST /sandbox/accounts, and
// refreshes of those); tokens an app obtained through an authorization
// code, and those of AddToken, are another application's and are not
// reported. Either token may since have been revoked or have expired. A
// standalone server prints or saves them at start.
func (s *Server) Accounts() []Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Account, 0, len(s.accountOrder))
	for _, a := range s.accountOrder {
		out = append(out, Account{ID: a.id, Username: a.username, AccessToken: a.access, RefreshToken: a.refresh})
	}
	return out
}

// RestoreAccount registers an account with a known id, username and
// tokens, as a restarted sandbox must for a client that stored them (the
// demo workspace survives restarts of `oncepost run --demo`; the sandbox's
// timeline does not). It fails if the id or a token is taken, if a field
// is empty, or if the account cannot be saved in the DataDir.
func (s *Server) RestoreAccount(a Account) error {
	if a.ID == "" || a.Username == "" || a.AccessToken == "" || a.RefreshToken == "" {
		return fmt.Errorf("sandbox: restore account %q: id, username and both tokens are required", a.ID)
	}
	s.mu.Lock()
	if _, taken := s.accounts[a.ID]; taken {
		s.mu.Unlock()
		return fmt.Errorf("sandbox: restore account %q: id is taken", a.ID)
	}
	_, accessTaken := s.access[a.AccessToken]
	_, refreshTaken := s.refresh[a.RefreshToken]
	if accessTaken || refreshTaken {
		s.mu.Unlock()
		return fmt.Errorf("sandbox: restore account %q: a token is already in use", a.ID)
	}
	now := s.opts.Now()
	acct := &account{id: a.ID, username: a.Username, createdAt: now}
	s.addAccountLocked(acct)
	s.grantTokensLocked(acct, a.AccessToken, a.RefreshToken, s.accessExpiry(now), "", defaultScope, s.ownApp)
	s.bumpIDLocked(a.ID)
	s.journalAccountLocked(acct)
	s.mu.Unlock()
	if err := s.sync(); err != nil {
		return fmt.Errorf("sandbox: restore account %q: %w", a.ID, err)
	}
	return nil
}

// bumpIDLocked raises the id counter to a numeric id, so ids issued later
// are larger.
func (s *Server) bumpIDLocked(id string) {
	if n, err := strconv.ParseUint(id, 10, 64); err == nil && n > s.lastID {
		s.lastID = n
	}
}

// addAccountLocked registers a new account. A mention of a username
// shared by several accounts resolves to the first of them (Mastodon's
// usernames are unique per instance; the sandbox's need not be).
func (s *Server) addAccountLocked(a *account) {
	s.accounts[a.id] = a
	s.accountOrder = append(s.accountOrder, a)
	if key := strings.ToLower(a.username); s.byUsername[key] == nil {
		s.byUsername[key] = a
	}
}

// resolveLocked is the sandbox's mention resolver: the local account with
// the username, compared case-insensitively as Mastodon's
// Account.find_remote does, or nil.
func (s *Server) resolveLocked(username string) *account {
	return s.byUsername[strings.ToLower(username)]
}

// contentBase is the base URL hashtag and profile links in rendered
// content point at when no request supplies one.
func (s *Server) contentBase() string {
	if u := s.URL(); u != "" {
		return u
	}
	return "http://127.0.0.1"
}

// RenderContent returns the HTML this server would serve as a status's
// "content" if the text were posted now: stripped, mentions of its
// accounts rewritten to their usernames and linked, URLs and hashtags
// linked, paragraphs and line breaks as Mastodon renders them (see
// render.go for the Mastodon source it follows).
func (s *Server) RenderContent(text string) string {
	base := s.contentBase()
	s.mu.Lock()
	defer s.mu.Unlock()
	return renderContent(rewriteMentions(stripText(text), s.resolveLocked), base, s.resolveLocked)
}

// issueTokensLocked makes a new access and refresh token of application
// ap for the account, the refresh token bound to clientID ("" for any
// client) with scope.
func (s *Server) issueTokensLocked(accountID string, now time.Time, clientID, scope string, ap *app) (access, refresh string) {
	access, refresh = rand.Text(), rand.Text()
	s.grantTokensLocked(s.accounts[accountID], access, refresh, s.accessExpiry(now), clientID, scope, ap)
	return access, refresh
}

// accessExpiry is when an access token issued at now expires; zero for
// never.
func (s *Server) accessExpiry(now time.Time) time.Time {
	if s.opts.TokenTTL > 0 {
		return now.Add(s.opts.TokenTTL)
	}
	return time.Time{}
}

// grantTokensLocked registers an access and a refresh token of
// application ap for the account; when ap is the sandbox's own, they
// become the account's latest.
func (s *Server) grantTokensLocked(a *account, access, refresh string, expiresAt time.Time, clientID, scope string, ap *app) {
	s.access[access] = &accessToken{accountID: a.id, expiresAt: expiresAt, app: ap}
	s.refresh[refresh] = refreshGrant{accountID: a.id, accessToken: access, clientID: clientID, scope: scope, app: ap}
	if ap == s.ownApp {
		a.access, a.refresh = access, refresh
	}
}

// nextIDLocked returns a snowflake-like id: milliseconds since the epoch
// shifted left 16 bits, bumped to stay strictly increasing.
func (s *Server) nextIDLocked(now time.Time) string {
	ms := now.UnixMilli()
	if ms < 0 {
		ms = 0
	}
	id := uint64(ms) << 16
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return strconv.FormatUint(id, 10)
}

// Script queues faults for the next POST /api/v1/statuses calls of any
// account, consumed one per call in order. Scripted faults take precedence
// over random ones.
func (s *Server) Script(faults ...Fault) { s.ScriptRoute(RouteCreateStatus, faults...) }

// ScriptRoute queues faults for the next calls of a route, named as in the
// Route constants (e.g. "POST /api/v2/media", "GET
// /api/v1/accounts/:id/statuses", "POST /oauth/token"). On reads and on the
// token grant "commit" means doing the work (the token grant rotates the
// tokens before a drop-response). It panics on an unknown route or fault
// kind, which are programming errors (the control API's POST
// /sandbox/faults checks both before calling it).
func (s *Server) ScriptRoute(route string, faults ...Fault) {
	if !knownRoutes[route] {
		panic(fmt.Sprintf("sandbox: ScriptRoute: unknown route %q", route))
	}
	for _, f := range faults {
		if !knownKinds[f.Kind] {
			panic(fmt.Sprintf("sandbox: ScriptRoute: unknown fault kind %q", f.Kind))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[route] = append(s.scripts[route], faults...)
}

// ScriptText queues faults for the next POST /api/v1/statuses calls whose
// status text, as sent, is text, consumed one per such call in order: a
// test can make one post's create (a thread's second part) lose its answer
// whatever the creates before it drew. A text fault replaces the plan the
// call drew when it arrived (a scripted or random one), once its body has
// been read; a call whose drawn plan drops it unread or refuses it before
// the commit (drop-request, 503, 429, 401) does not reach that point and
// leaves the text fault queued. Only the kinds that act after the body is
// read are taken: drop-response, 500-after-commit and the two delays; it
// panics on another, a programming error.
func (s *Server) ScriptText(text string, faults ...Fault) {
	for _, f := range faults {
		switch f.Kind {
		case FaultDropResponse, Fault500AfterCommit, FaultDelayBeforeCommit, FaultDelayAfterCommit:
		default:
			panic(fmt.Sprintf("sandbox: ScriptText: fault kind %q acts before the body is read", f.Kind))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.textScripts[text] = append(s.textScripts[text], faults...)
}

// textPlan takes the first fault ScriptText queued for the create's text,
// if any, records it on the create record rec as the request's plan, and
// returns it.
func (s *Server) textPlan(rec int, c *call) (plan, bool) {
	if rec < 0 {
		return plan{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.textScripts) == 0 {
		return plan{}, false
	}
	p, err := parseStatusParams(c)
	if err != nil {
		return plan{}, false
	}
	q := s.textScripts[p.text]
	if len(q) == 0 {
		return plan{}, false
	}
	if len(q) == 1 {
		delete(s.textScripts, p.text)
	} else {
		s.textScripts[p.text] = q[1:]
	}
	pl := planOf(q[0])
	cr := &s.creates[rec]
	cr.Fault = pl.String()
	if s.j != nil {
		fault := cr.Fault
		s.j.add(record{Op: opCreateUpdate, CreateUpdate: &createUpdateRec{Seq: cr.Seq, Fault: &fault}})
	}
	return pl, true
}

var knownKinds = map[FaultKind]bool{
	FaultDelayBeforeCommit: true, FaultDelayAfterCommit: true, FaultDropRequest: true,
	FaultDropResponse: true, Fault500AfterCommit: true, Fault503: true, Fault429: true, Fault401: true,
}

var knownRoutes = map[string]bool{
	RouteCreateStatus: true, RouteGetStatus: true, RouteStatusSource: true, RouteDeleteStatus: true,
	RouteAccountStatuses: true, RouteVerifyCredentials: true, RouteUploadMedia: true,
	RouteGetMedia: true, RouteInstance: true, RouteInstanceV2: true, RouteOAuthToken: true,
	RouteCreateApp: true, RouteVerifyAppCredentials: true,
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Statuses returns the account's committed, not deleted statuses, newest
// first; nil for an unknown account.
func (s *Server) Statuses(accountID string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[accountID]
	if a == nil {
		return nil
	}
	var out []Status
	for i := len(a.statuses) - 1; i >= 0; i-- {
		if st := a.statuses[i]; !st.deleted {
			out = append(out, st.clone())
		}
	}
	return out
}

// InjectStatus commits a post directly, without a request. The text is
// prepared as a create's is (stripped, mentions rewritten). It is counted
// like any commit (Committed, Duplicates) but not as a create request. The
// status's application is the sandbox's own ("sandbox"), the one of
// AddAccount's tokens, so a client holding those takes it for its own; to
// post as another application, post with a token from AddToken. It panics
// if the account does not exist.
func (s *Server) InjectStatus(accountID, text string) Status {
	base := s.contentBase()
	s.mu.Lock()
	a := s.accounts[accountID]
	if a == nil {
		s.mu.Unlock()
		panic(fmt.Sprintf("sandbox: InjectStatus: unknown account %q", accountID))
	}
	st := s.commitLocked(a, s.ownApp, s.prepareTextLocked(text), "public", nil, "", base)
	st.Injected = true
	s.journalStatusLocked(st, time.Time{}, 0)
	out := st.clone()
	s.mu.Unlock()
	if err := s.sync(); err != nil {
		s.log.Error("sandbox: saving an injected status failed", "status", out.ID, "err", err)
	}
	return out
}

// ExpireAccessToken makes every access token of the account invalid (401);
// the refresh token keeps working.
func (s *Server) ExpireAccessToken(accountID string) {
	s.mu.Lock()
	s.expireAccessLocked(accountID)
	s.journalLocked(record{Op: opExpireAccess, ExpireAccess: &accountRef{Account: accountID}})
	s.mu.Unlock()
	if err := s.sync(); err != nil {
		s.log.Error("sandbox: saving an access token expiry failed", "account", accountID, "err", err)
	}
}

func (s *Server) expireAccessLocked(accountID string) {
	for _, tok := range s.access {
		if tok.accountID == accountID {
			tok.revoked = true
		}
	}
}

// RevokeRefreshToken makes every refresh token of the account invalid: the
// refresh grant then fails with 400 invalid_grant.
func (s *Server) RevokeRefreshToken(accountID string) {
	s.mu.Lock()
	s.revokeRefreshLocked(accountID)
	s.journalLocked(record{Op: opRevokeRefresh, RevokeRefresh: &accountRef{Account: accountID}})
	s.mu.Unlock()
	if err := s.sync(); err != nil {
		s.log.Error("sandbox: saving a refresh token revocation failed", "account", accountID, "err", err)
	}
}

func (s *Server) revokeRefreshLocked(accountID string) {
	for tok, g := range s.refresh {
		if g.accountID == accountID {
			delete(s.refresh, tok)
		}
	}
}

// prepareTextLocked is what Mastodon does to a status text before it is
// stored: String#strip (Status#prepare_contents) and the rewrite of every
// resolvable mention to "@acct" (ProcessMentionsService#scan_text!).
func (s *Server) prepareTextLocked(text string) string {
	return rewriteMentions(stripText(text), s.resolveLocked)
}

// commitLocked stores a new status of account a posted with application
// ap, with text as prepareTextLocked made it and content rendered for
// base, and updates the counters.
func (s *Server) commitLocked(a *account, ap *app, text, visibility string, ms []*media, idemKey, base string) *status {
	now := s.opts.Now()
	id := s.nextIDLocked(now)
	num, _ := strconv.ParseUint(id, 10, 64)
	st := &status{num: num, app: ap}
	st.ID = id
	st.AccountID = a.id
	st.Username = a.username
	st.Text = text
	st.Content = renderContent(text, base, s.resolveLocked)
	st.Visibility = visibility
	st.CreatedAt = now.UTC().Truncate(time.Millisecond)
	st.IdempotencyKey = idemKey
	for _, m := range ms {
		st.MediaIDs = append(st.MediaIDs, m.id)
		st.MediaSHA256 = append(st.MediaSHA256, m.sha256)
	}
	st.Fingerprint = platform.Fingerprint(text, st.MediaSHA256)
	s.storeStatusLocked(a, st, ms)
	return st
}

// storeStatusLocked adds a new status of account a with its attached
// media ms, sets its Duplicate flag from the fingerprints the account has
// committed, and updates the counters; commits and replayed commits share
// it.
func (s *Server) storeStatusLocked(a *account, st *status, ms []*media) {
	for _, m := range ms {
		m.statusID = st.ID
	}
	seen := s.fingerprints[a.id]
	if seen == nil {
		seen = map[string]bool{}
		s.fingerprints[a.id] = seen
	}
	if seen[st.Fingerprint] {
		st.Duplicate = true
		s.stats.Duplicates++
	}
	seen[st.Fingerprint] = true
	s.statuses[st.num] = st
	a.statuses = append(a.statuses, st)
	a.live++
	s.stats.Committed++
}

func (st *status) clone() Status {
	c := st.Status
	c.App = st.app.name
	c.MediaIDs = append([]string(nil), st.MediaIDs...)
	c.MediaSHA256 = append([]string(nil), st.MediaSHA256...)
	return c
}
