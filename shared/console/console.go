package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/httpapi"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what the console is built from.
type Config struct {
	// API is the HTTP API's configuration: the console reads and acts
	// through the same ports, and serves the API itself at /v1 (its Auth
	// gets the session's principal first, then its own).
	API httpapi.Config
	// Tokens checks a sign-in's API token (one machine). Nil: sign-in is
	// by the one-time link only (SignInLink).
	Tokens apitoken.Store
	// Media, if set, reads stored attachments: the composer fits an
	// image to each platform of the accounts chosen and shows each
	// version in its preview. Without it images go as uploaded and the
	// preview shows their dimensions only.
	Media MediaReader
	// Fitter gives the image limits the composer fits images to (the
	// API's Desk, publishing.Desk.FitLimits); New requires it with Media.
	Fitter ImageFitter
	// Operator is the principal a one-time sign-in link signs in as (AWS:
	// the caller's IAM identity, every scope: IAM decides each call).
	Operator httpapi.Principal
	// SecureCookies marks the session cookie Secure: on whenever the
	// console is reached other than over loopback.
	SecureCookies bool
	// SessionTTL is how long a session lasts without use (default 12 h);
	// SessionMaxAge how long it lasts at most, used or not (default 24 h).
	SessionTTL, SessionMaxAge time.Duration
	// Posts, if set, reads a post alone (publishing.Posts has it): the
	// inbox shows each held post's text from it. Without it the inbox
	// reads each through Desk.Show, which reads the post's ledger entries
	// and their history too.
	Posts PostReader
	// StaleAfter is the sweeper's (publishing.Sweeper.StaleAfter): the
	// status page counts stale entries as it does. Zero means
	// publishing.StaleAfter.
	StaleAfter time.Duration
	// Events, if set, are the workspace's recent events (the outbox's,
	// on SQLite): the status page lists them and the accounts page finds
	// each account's last success among them. Nil: neither is shown.
	Events EventReader
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// PostReader reads one post (publishing.Posts.GetPost): post.ErrNotFound
// when there is none.
type PostReader interface {
	GetPost(ctx context.Context, id post.ID) (post.Post, error)
}

// EventReader reads the recent events, newest first
// (sqlitestore.Store.RecentEvents); a limit ≤ 0 means all.
type EventReader interface {
	RecentEvents(ctx context.Context, limit int) ([]publishing.Event, error)
}

// Handler serves the console and, under /v1, the API.
type Handler struct {
	cfg      Config
	api      *httpapi.Server
	sessions *sessions
	views    map[string]*template.Template
	static   http.Handler
	mux      *http.ServeMux
	cop      *http.CrossOriginProtection
	log      *slog.Logger
	// onceLinks are the unused one-time sign-in secrets.
	once *onceLinks
	// liveEvery is how often the calendar's live stream reads again (0:
	// livePoll; tests shorten it).
	liveEvery time.Duration
}

// New builds the console and the API it serves.
func New(cfg Config) (*Handler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.SessionMaxAge <= 0 {
		cfg.SessionMaxAge = 24 * time.Hour
	}
	if cfg.Tokens == nil && cfg.Operator.ID == "" {
		return nil, errors.New("console: Config needs Tokens (sign in with an API token) or Operator (sign in with a one-time link)")
	}
	if cfg.Media != nil && cfg.Fitter == nil {
		return nil, errors.New("console: Config.Media needs Config.Fitter (the desk's FitLimits) to fit the composer's images")
	}
	apiCfg := cfg.API
	if apiCfg.Auth == nil {
		return nil, errors.New("console: Config.API.Auth is required")
	}
	apiCfg.Auth = httpapi.ContextPrincipalOr(apiCfg.Auth)
	if apiCfg.Logger == nil {
		apiCfg.Logger = cfg.Logger
	}
	api, err := httpapi.New(apiCfg)
	if err != nil {
		return nil, fmt.Errorf("console: the API: %w", err)
	}
	views, err := parseViews()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console: static assets: %w", err)
	}
	h := &Handler{cfg: cfg, api: api, sessions: newSessions(cfg.SessionTTL, cfg.SessionMaxAge, cfg.Now), views: views,
		static: http.StripPrefix("/static/", http.FileServerFS(sub)), mux: http.NewServeMux(),
		cop: http.NewCrossOriginProtection(), log: cfg.Logger, once: newOnceLinks(cfg.Now)}
	h.cop.SetDenyHandler(http.HandlerFunc(h.crossOrigin))
	h.routes()
	return h, nil
}

// SignInLink makes a one-time sign-in path (/signin/once/…) that signs
// in as Config.Operator: what `oncepost console` prints for a stack.
func (h *Handler) SignInLink() string {
	return "/signin/once/" + h.once.add()
}

// ServeHTTP answers a console or API request. Every request passes
// CrossOriginProtection first (it lets safe methods through); a /v1
// request with the session cookie and no Authorization header is the
// console's own JavaScript: it must carry the session's CSRF token, and
// is then the API's with the session's principal.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.cop.Handler(http.HandlerFunc(h.serve)).ServeHTTP(w, r)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	if isAPI(r.URL.Path) {
		h.serveAPI(w, r)
		return
	}
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	w.Header().Set("Referrer-Policy", "same-origin")
	h.mux.ServeHTTP(w, r)
}

func isAPI(path string) bool { return path == "/v1" || len(path) > 3 && path[:4] == "/v1/" }

// serveAPI serves /v1: with a session (cookie, no Authorization header)
// as the session's principal, the CSRF header required on every method
// that changes something; otherwise the API's own auth decides.
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		s, err := h.session(r)
		switch {
		case errors.Is(err, errSignedOut):
		case err != nil:
			h.sessionUnavailable(w, r, err)
			return
		default:
			if !safeMethod(r.Method) && !s.checkCSRF(r.Header.Get(csrfHeader)) {
				http.Error(w, "the request lacks this session's CSRF token (header "+csrfHeader+")", http.StatusForbidden)
				return
			}
			r = r.WithContext(httpapi.WithPrincipal(r.Context(), s.principal))
		}
	}
	h.api.ServeHTTP(w, r)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// crossOrigin answers a request CrossOriginProtection refused.
func (h *Handler) crossOrigin(w http.ResponseWriter, r *http.Request) {
	h.log.WarnContext(r.Context(), "console: cross-origin request refused", "method", r.Method, "path", r.URL.Path)
	http.Error(w, "cross-origin request refused: a change must come from the console's own pages", http.StatusForbidden)
}

// randomID is 128 random bits, base32 without padding.
func randomID() string {
	return rand.Text()
}
