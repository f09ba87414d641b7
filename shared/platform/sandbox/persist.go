package sandbox

// Persistence: a server opened with Options.DataDir keeps its state in an
// append-only journal, DataDir/sandbox.journal (mode 0600: it holds tokens
// and client secrets), and rebuilds it at Open by replaying the journal.
//
// The journal is JSON lines. The first line is a header,
//
//	{"op":"header","header":{"format":"oncepost-sandbox-journal","version":1}}
//
// and every other line is one change, written as an object naming the
// change in "op" and carrying it under the key of the same name, e.g.
//
//	{"op":"delete","delete":{"id":"7338290438356992"}}
//
// The changes (the *Rec types below give the fields):
//
//	account         an account and its first tokens (AddAccount, RestoreAccount, POST /sandbox/accounts)
//	grant           tokens issued by POST /oauth/token, with the refresh token, access token or code it spent, or by AddToken
//	expire_access   ExpireAccessToken
//	revoke_refresh  RevokeRefreshToken
//	create          a POST /api/v1/statuses arrived (counted, drawn from the fault plan, recorded)
//	create_update   the fingerprint or the HTTP status of a create record became known
//	status          a status was committed, with the idempotency key entry and create record it completes
//	replay          a create was answered from the Idempotency-Key store
//	delete          a status was deleted
//	media           a media upload, bytes included (base64)
//	media_poll      a media poll was answered "still processing"
//	app             an OAuth app was registered (POST /api/v1/apps, AddToken)
//	code            an authorization code was issued
//
// Tokens and statuses name their application by its client id ("app");
// the sandbox's own application is left out, so a journal written before
// tokens had applications loads with every token and status the sandbox's
// own, as they were shown then.
//
// Every change is one line, so a change is either wholly in the journal or
// not at all. Lines are added in the order the changes are made (under the
// server's lock) and written and fsynced before the HTTP response that
// reports any of them (several requests' lines may share one write and one
// fsync). The counters (Stats), the fingerprints each account has
// committed, the Duplicate flags and the id counter are not written: they
// follow from the changes, and replay recomputes them. Scripted faults are
// not kept. The random fault generator is advanced once per replayed create,
// so the n-th create of the sandbox's life draws the same random faults
// whether or not it restarted in between.
//
// A crash while a line is written leaves a last line without its newline:
// Open ignores it (and truncates it away), since no response can have
// reported it. Any other line that does not parse, or that does not fit
// the state before it, fails Open with an error naming the file and the
// line. The journal is never compacted: it grows with every change.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// journalName is the journal's file name in Options.DataDir.
const journalName = "sandbox.journal"

// journalFormat and journalVersion identify the journal in its header.
const (
	journalFormat  = "oncepost-sandbox-journal"
	journalVersion = 1
)

// The ops of journal records.
const (
	opHeader        = "header"
	opAccount       = "account"
	opGrant         = "grant"
	opExpireAccess  = "expire_access"
	opRevokeRefresh = "revoke_refresh"
	opCreate        = "create"
	opCreateUpdate  = "create_update"
	opStatus        = "status"
	opReplay        = "replay"
	opDelete        = "delete"
	opMedia         = "media"
	opMediaPoll     = "media_poll"
	opApp           = "app"
	opCode          = "code"
)

// record is one journal line: Op and the one field of the same name.
type record struct {
	Op            string           `json:"op"`
	Header        *headerRec       `json:"header,omitempty"`
	Account       *accountRec      `json:"account,omitempty"`
	Grant         *grantRec        `json:"grant,omitempty"`
	ExpireAccess  *accountRef      `json:"expire_access,omitempty"`
	RevokeRefresh *accountRef      `json:"revoke_refresh,omitempty"`
	Create        *createRec       `json:"create,omitempty"`
	CreateUpdate  *createUpdateRec `json:"create_update,omitempty"`
	Status        *statusRec       `json:"status,omitempty"`
	Replay        *replayRec       `json:"replay,omitempty"`
	Delete        *idRef           `json:"delete,omitempty"`
	Media         *mediaRec        `json:"media,omitempty"`
	MediaPoll     *idRef           `json:"media_poll,omitempty"`
	App           *appRec          `json:"app,omitempty"`
	Code          *codeRec         `json:"code,omitempty"`
}

type headerRec struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// tokensRec is an access token and the refresh token issued with it.
type tokensRec struct {
	Access          string    `json:"access"`
	AccessExpiresAt time.Time `json:"access_expires_at,omitzero"`
	Refresh         string    `json:"refresh"`
	ClientID        string    `json:"client_id,omitempty"`
	Scope           string    `json:"scope"`
	// App is the client id of the application the tokens belong to, ""
	// for the sandbox's own.
	App string `json:"app,omitempty"`
}

type accountRec struct {
	ID        string    `json:"id"`
	Username  string    `json:"username"`
	CreatedAt time.Time `json:"created_at"`
	Tokens    tokensRec `json:"tokens"`
}

type grantRec struct {
	Account string    `json:"account"`
	Tokens  tokensRec `json:"tokens"`
	// SpentRefresh is the refresh token a refresh grant rotated away and
	// RevokeAccess the access token issued with it.
	SpentRefresh string `json:"spent_refresh,omitempty"`
	RevokeAccess string `json:"revoke_access,omitempty"`
	// SpentCode is the authorization code an authorization_code grant used.
	SpentCode string `json:"spent_code,omitempty"`
}

type accountRef struct {
	Account string `json:"account"`
}

type idRef struct {
	ID string `json:"id"`
}

type createRec struct {
	Seq            int       `json:"seq"`
	At             time.Time `json:"at"`
	Account        string    `json:"account,omitempty"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	Fault          string    `json:"fault,omitempty"`
}

type createUpdateRec struct {
	Seq         int     `json:"seq"`
	Fingerprint *string `json:"fingerprint,omitempty"`
	HTTPStatus  *int    `json:"http_status,omitempty"`
	// Fault is the plan a text-scripted fault (ScriptText) put in place of
	// the one drawn when the request arrived.
	Fault *string `json:"fault,omitempty"`
}

type statusRec struct {
	ID             string    `json:"id"`
	Account        string    `json:"account"`
	Text           string    `json:"text"`
	Content        string    `json:"content"`
	Visibility     string    `json:"visibility"`
	CreatedAt      time.Time `json:"created_at"`
	MediaIDs       []string  `json:"media_ids,omitempty"`
	MediaSHA256    []string  `json:"media_sha256,omitempty"`
	Fingerprint    string    `json:"fingerprint"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	// InReplyTo is the id of the status this one replies to, "" for none.
	InReplyTo string `json:"in_reply_to_id,omitempty"`
	// Duplicate is checked against the fingerprints replayed before it.
	Duplicate bool `json:"duplicate,omitempty"`
	Injected  bool `json:"injected,omitempty"`
	// App is the client id of the application the status was posted
	// with, "" for the sandbox's own.
	App string `json:"app,omitempty"`
	// IdempotencyExpiresAt is set when the commit stored its
	// Idempotency-Key for replays, until then.
	IdempotencyExpiresAt time.Time `json:"idempotency_expires_at,omitzero"`
	// CreateSeq is the create record the commit completes, 0 for none.
	CreateSeq int `json:"create_seq,omitempty"`
}

type replayRec struct {
	Seq         int    `json:"seq,omitempty"`
	StatusID    string `json:"status_id"`
	Fingerprint string `json:"fingerprint"`
}

type mediaRec struct {
	ID          string `json:"id"`
	Account     string `json:"account"`
	Data        []byte `json:"data"`
	ContentType string `json:"content_type,omitempty"`
	Description string `json:"description,omitempty"`
	SHA256      string `json:"sha256"`
	PollsLeft   int    `json:"polls_left,omitempty"`
}

type appRec struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Website      string    `json:"website,omitempty"`
	RedirectURIs []string  `json:"redirect_uris"`
	Scopes       []string  `json:"scopes"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret"`
	CreatedAt    time.Time `json:"created_at"`
}

type codeRec struct {
	Code        string    `json:"code"`
	ClientID    string    `json:"client_id"`
	RedirectURI string    `json:"redirect_uri"`
	Scope       string    `json:"scope"`
	Account     string    `json:"account"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Open returns a server configured by opts, like New. With opts.DataDir
// set it creates the directory (mode 0700) if needed, takes an exclusive
// lock on the journal in it (a second server on the same directory fails
// to open), and loads the state the journal holds; the server then
// journals every change there until Close. Without DataDir it is New. It
// also checks opts.Addr, as Start would.
func Open(opts Options) (*Server, error) {
	if opts.Addr != "" {
		if err := checkLoopbackAddr(opts.Addr); err != nil {
			return nil, fmt.Errorf("sandbox: open: %w", err)
		}
	}
	s := newServer(opts)
	if opts.DataDir == "" {
		return s, nil
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: open: creating the data directory: %w", err)
	}
	j, err := openJournal(filepath.Join(opts.DataDir, journalName), s.log, func(r record) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.replayLocked(r)
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: open: %w", err)
	}
	s.j = j
	return s, nil
}

// journal is the append-only file of a server's changes.
type journal struct {
	path string
	f    *os.File

	wmu sync.Mutex // held while writing to f

	mu      sync.Mutex // guards the fields below
	pending []byte     // lines added and not yet written
	added   uint64     // lines added since open
	durable uint64     // lines written and fsynced
	err     error      // the first failure; every later sync returns it
	closed  bool
}

// errJournalClosed is the failure of a change made after Close.
var errJournalClosed = errors.New("journal is closed")

// openJournal opens (creating it if needed) and locks the journal at path,
// passes every complete line to apply, cuts off a torn last line, and
// writes the header into a new journal.
func openJournal(path string, log *slog.Logger, apply func(record) error) (*journal, error) {
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
		}
	}()
	if err := lockFile(f); err != nil {
		return nil, fmt.Errorf("locking the journal %s (is another sandbox using this data directory?): %w", path, err)
	}
	// The journal holds tokens: never readable by others, even if it was
	// made so by hand.
	if err := f.Chmod(0o600); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	good, lines, err := replayJournal(f, path, apply)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if size := info.Size(); size > good {
		log.Warn("sandbox: ignoring the torn last line of the journal", "path", path, "line", lines+1, "bytes", size-good)
		if err := f.Truncate(good); err != nil {
			return nil, fmt.Errorf("journal %s: cutting off the torn last line: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
	}
	j := &journal{path: path, f: f}
	if lines == 0 {
		j.add(record{Op: opHeader, Header: &headerRec{Format: journalFormat, Version: journalVersion}})
		if err := j.sync(); err != nil {
			return nil, err
		}
	}
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
	}
	ok = true
	return j, nil
}

// replayJournal passes every newline-terminated line of r to apply and
// returns the offset just after the last of them and their count. Bytes
// after the last newline are a torn write and are left out.
func replayJournal(r io.Reader, path string, apply func(record) error) (good int64, lines int, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return good, lines, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("reading the journal %s: %w", path, err)
		}
		lines++
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return 0, 0, fmt.Errorf("journal %s: line %d: %w", path, lines, err)
		}
		if err := checkHeader(rec, lines == 1); err != nil {
			return 0, 0, fmt.Errorf("journal %s: line %d: %w", path, lines, err)
		}
		if lines > 1 {
			if err := apply(rec); err != nil {
				return 0, 0, fmt.Errorf("journal %s: line %d: %w", path, lines, err)
			}
		}
		good += int64(len(b))
	}
}

// checkHeader checks that the first line, and only it, is a header this
// version reads.
func checkHeader(r record, first bool) error {
	switch {
	case first && (r.Op != opHeader || r.Header == nil || r.Header.Format != journalFormat):
		return fmt.Errorf("not a sandbox journal (the first line must be a %q header)", journalFormat)
	case first && r.Header.Version != journalVersion:
		return fmt.Errorf("journal version %d, this sandbox reads version %d", r.Header.Version, journalVersion)
	case !first && r.Op == opHeader:
		return errors.New("a header after the first line")
	}
	return nil
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// add queues a line; call it with the server's lock held so lines are in
// the order the changes were made.
func (j *journal) add(r record) {
	line, err := json.Marshal(r)
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.err != nil:
		return
	case j.closed:
		j.err = fmt.Errorf("journal %s: a %s change after Close: %w", j.path, r.Op, errJournalClosed)
		return
	case err != nil:
		j.err = fmt.Errorf("journal %s: encoding a %s change: %w", j.path, r.Op, err)
		return
	}
	j.pending = append(j.pending, line...)
	j.pending = append(j.pending, '\n')
	j.added++
}

// sync returns once every line added before the call is written and
// fsynced. Concurrent calls share writes: a call finding its lines already
// written by another returns at once. After a failure the journal is
// broken: every later sync returns the first error.
func (j *journal) sync() error {
	j.mu.Lock()
	target, err := j.added, j.err
	done := j.durable >= target
	j.mu.Unlock()
	if err != nil || done {
		return err
	}
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.mu.Lock()
	if j.err != nil || j.durable >= target {
		err := j.err
		j.mu.Unlock()
		return err
	}
	buf, upto := j.pending, j.added
	j.pending = nil
	j.mu.Unlock()

	_, err = j.f.Write(buf)
	if err == nil {
		err = j.f.Sync()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		// A partial write may have left part of a line: no line may follow
		// it, so nothing is written any more.
		j.err = fmt.Errorf("journal %s: %w", j.path, err)
		return j.err
	}
	j.durable = upto
	return nil
}

// close syncs what is pending, closes the file (releasing its lock) and
// returns the journal's first failure, if any.
func (j *journal) close() error {
	syncErr := j.sync()
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	if err := j.f.Close(); err != nil && syncErr == nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return syncErr
}

// sync makes every change made so far durable; nil at once without a
// DataDir.
func (s *Server) sync() error {
	if s.j == nil {
		return nil
	}
	return s.j.sync()
}

// journalLocked adds a change to the journal, if there is one.
func (s *Server) journalLocked(r record) {
	if s.j != nil {
		s.j.add(r)
	}
}

// tokensRecLocked describes an access token and a refresh token issued
// together.
func (s *Server) tokensRecLocked(access, refresh string) tokensRec {
	t := tokensRec{Access: access, Refresh: refresh}
	if tok := s.access[access]; tok != nil {
		t.AccessExpiresAt = tok.expiresAt
		t.App = s.appRefLocked(tok.app)
	}
	if g, ok := s.refresh[refresh]; ok {
		t.ClientID, t.Scope = g.clientID, g.scope
	}
	return t
}

// journalAccountLocked journals a new account with its latest tokens.
func (s *Server) journalAccountLocked(a *account) {
	if s.j == nil {
		return
	}
	s.j.add(record{Op: opAccount, Account: &accountRec{
		ID: a.id, Username: a.username, CreatedAt: a.createdAt, Tokens: s.tokensRecLocked(a.access, a.refresh),
	}})
}

// journalStatusLocked journals a commit: the status, the idempotency entry
// stored with it (idemExpires zero when none was) and the create record it
// completes (seq 0 when none).
func (s *Server) journalStatusLocked(st *status, idemExpires time.Time, seq int) {
	if s.j == nil {
		return
	}
	s.j.add(record{Op: opStatus, Status: &statusRec{
		ID: st.ID, Account: st.AccountID, Text: st.Text, Content: st.Content, Visibility: st.Visibility,
		CreatedAt: st.CreatedAt, MediaIDs: st.MediaIDs, MediaSHA256: st.MediaSHA256, Fingerprint: st.Fingerprint,
		IdempotencyKey: st.IdempotencyKey, InReplyTo: st.InReplyToID, Duplicate: st.Duplicate, Injected: st.Injected, App: s.appRefLocked(st.app),
		IdempotencyExpiresAt: idemExpires, CreateSeq: seq,
	}})
}

// appRefLocked is how the journal names an application: its client id,
// or "" for the sandbox's own.
func (s *Server) appRefLocked(ap *app) string {
	if ap == s.ownApp {
		return ""
	}
	return ap.clientID
}

// resolveAppLocked is the application a journal's app reference names:
// the sandbox's own for "", else a registered one.
func (s *Server) resolveAppLocked(ref string) (*app, error) {
	if ref == "" {
		return s.ownApp, nil
	}
	ap := s.apps[ref]
	if ap == nil {
		return nil, fmt.Errorf("unknown app %q", ref)
	}
	return ap, nil
}

// journalCreateUpdateLocked journals a create record's new fingerprint or
// HTTP status (nil: unchanged).
func (s *Server) journalCreateUpdateLocked(seq int, fingerprint *string, httpStatus *int) {
	if s.j == nil {
		return
	}
	s.j.add(record{Op: opCreateUpdate, CreateUpdate: &createUpdateRec{Seq: seq, Fingerprint: fingerprint, HTTPStatus: httpStatus}})
}

// errMissingPayload is a record whose op names a field it lacks.
func errMissingPayload(op string) error {
	return fmt.Errorf("a %q change without its %q object", op, op)
}

// replayLocked applies one journal line to the state.
func (s *Server) replayLocked(r record) error {
	switch r.Op {
	case opAccount:
		if r.Account == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayAccountLocked(r.Account)
	case opGrant:
		if r.Grant == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayGrantLocked(r.Grant)
	case opExpireAccess, opRevokeRefresh:
		ref := r.ExpireAccess
		if r.Op == opRevokeRefresh {
			ref = r.RevokeRefresh
		}
		if ref == nil {
			return errMissingPayload(r.Op)
		}
		if s.accounts[ref.Account] == nil {
			return fmt.Errorf("%s: unknown account %q", r.Op, ref.Account)
		}
		if r.Op == opExpireAccess {
			s.expireAccessLocked(ref.Account)
		} else {
			s.revokeRefreshLocked(ref.Account)
		}
		return nil
	case opCreate:
		if r.Create == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayCreateLocked(r.Create)
	case opCreateUpdate:
		u := r.CreateUpdate
		if u == nil {
			return errMissingPayload(r.Op)
		}
		cr, err := s.createRecordLocked(u.Seq)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Op, err)
		}
		if u.Fingerprint != nil {
			cr.Fingerprint = *u.Fingerprint
		}
		if u.HTTPStatus != nil {
			cr.HTTPStatus = *u.HTTPStatus
		}
		if u.Fault != nil {
			cr.Fault = *u.Fault
		}
		return nil
	case opStatus:
		if r.Status == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayStatusLocked(r.Status)
	case opReplay:
		if r.Replay == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayReplayLocked(r.Replay)
	case opDelete:
		if r.Delete == nil {
			return errMissingPayload(r.Op)
		}
		st := s.findStatusLocked(r.Delete.ID)
		if st == nil {
			return fmt.Errorf("delete: no live status %q", r.Delete.ID)
		}
		s.deleteLocked(st)
		return nil
	case opMedia:
		if r.Media == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayMediaLocked(r.Media)
	case opMediaPoll:
		if r.MediaPoll == nil {
			return errMissingPayload(r.Op)
		}
		m := s.media[r.MediaPoll.ID]
		if m == nil {
			return fmt.Errorf("media_poll: unknown media %q", r.MediaPoll.ID)
		}
		if m.pollsLeft > 0 {
			m.pollsLeft--
		}
		return nil
	case opApp:
		if r.App == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayAppLocked(r.App)
	case opCode:
		if r.Code == nil {
			return errMissingPayload(r.Op)
		}
		return s.replayCodeLocked(r.Code)
	}
	return fmt.Errorf("unknown change %q", r.Op)
}

func (s *Server) replayAccountLocked(r *accountRec) error {
	if r.ID == "" || s.accounts[r.ID] != nil {
		return fmt.Errorf("account: id %q is empty or taken", r.ID)
	}
	if r.Tokens.Access == "" || r.Tokens.Refresh == "" {
		return fmt.Errorf("account %s: a token is missing", r.ID)
	}
	ap, err := s.resolveAppLocked(r.Tokens.App)
	if err != nil {
		return fmt.Errorf("account %s: %w", r.ID, err)
	}
	a := &account{id: r.ID, username: r.Username, createdAt: r.CreatedAt}
	s.addAccountLocked(a)
	s.grantTokensLocked(a, r.Tokens.Access, r.Tokens.Refresh, r.Tokens.AccessExpiresAt, r.Tokens.ClientID, r.Tokens.Scope, ap)
	s.bumpIDLocked(r.ID)
	return nil
}

func (s *Server) replayGrantLocked(r *grantRec) error {
	a := s.accounts[r.Account]
	if a == nil {
		return fmt.Errorf("grant: unknown account %q", r.Account)
	}
	if r.Tokens.Access == "" || r.Tokens.Refresh == "" {
		return fmt.Errorf("grant for account %s: a token is missing", r.Account)
	}
	ap, err := s.resolveAppLocked(r.Tokens.App)
	if err != nil {
		return fmt.Errorf("grant for account %s: %w", r.Account, err)
	}
	if r.SpentRefresh != "" {
		delete(s.refresh, r.SpentRefresh)
	}
	if tok := s.access[r.RevokeAccess]; tok != nil {
		tok.revoked = true
	}
	if r.SpentCode != "" {
		delete(s.codes, r.SpentCode)
	}
	s.grantTokensLocked(a, r.Tokens.Access, r.Tokens.Refresh, r.Tokens.AccessExpiresAt, r.Tokens.ClientID, r.Tokens.Scope, ap)
	return nil
}

func (s *Server) replayCreateLocked(r *createRec) error {
	if want := len(s.creates) + 1; r.Seq != want {
		return fmt.Errorf("create %d out of sequence, want %d", r.Seq, want)
	}
	if r.Account != "" && s.accounts[r.Account] == nil {
		return fmt.Errorf("create %d: unknown account %q", r.Seq, r.Account)
	}
	// The draws nextPlanLocked made for this create.
	s.stats.CreateRequests++
	s.rng.Float64()
	s.rng.Float64()
	s.rng.Float64()
	s.creates = append(s.creates, CreateRecord{
		Seq: r.Seq, AccountID: r.Account, IdempotencyKey: r.IdempotencyKey, Fault: r.Fault, At: r.At,
	})
	return nil
}

// createRecordLocked returns the create record numbered seq.
func (s *Server) createRecordLocked(seq int) (*CreateRecord, error) {
	if seq < 1 || seq > len(s.creates) {
		return nil, fmt.Errorf("no create record %d", seq)
	}
	return &s.creates[seq-1], nil
}

func (s *Server) replayStatusLocked(r *statusRec) error {
	a := s.accounts[r.Account]
	if a == nil {
		return fmt.Errorf("status %s: unknown account %q", r.ID, r.Account)
	}
	num, err := strconv.ParseUint(r.ID, 10, 64)
	if err != nil || num <= s.lastID {
		return fmt.Errorf("status %q: not an id above the counter %d", r.ID, s.lastID)
	}
	if len(r.MediaIDs) != len(r.MediaSHA256) {
		return fmt.Errorf("status %s: %d media ids and %d hashes", r.ID, len(r.MediaIDs), len(r.MediaSHA256))
	}
	ap, err := s.resolveAppLocked(r.App)
	if err != nil {
		return fmt.Errorf("status %s: %w", r.ID, err)
	}
	ms := make([]*media, 0, len(r.MediaIDs))
	for _, id := range r.MediaIDs {
		m := s.media[id]
		if m == nil || m.accountID != a.id || m.statusID != "" {
			return fmt.Errorf("status %s: media %q is unknown, another account's or attached", r.ID, id)
		}
		ms = append(ms, m)
	}
	var cr *CreateRecord
	if r.CreateSeq != 0 {
		if cr, err = s.createRecordLocked(r.CreateSeq); err != nil {
			return fmt.Errorf("status %s: %w", r.ID, err)
		}
	}
	s.lastID = num
	st := &status{num: num, app: ap}
	st.ID = r.ID
	st.AccountID = a.id
	st.Username = a.username
	st.Text = r.Text
	st.Content = r.Content
	st.Visibility = r.Visibility
	st.CreatedAt = r.CreatedAt
	st.MediaIDs = r.MediaIDs
	st.MediaSHA256 = r.MediaSHA256
	st.Fingerprint = r.Fingerprint
	st.IdempotencyKey = r.IdempotencyKey
	st.InReplyToID = r.InReplyTo
	st.Injected = r.Injected
	s.storeStatusLocked(a, st, ms)
	if st.Duplicate != r.Duplicate {
		return fmt.Errorf("status %s: duplicate is %t, the fingerprints before it say %t", r.ID, r.Duplicate, st.Duplicate)
	}
	if !r.IdempotencyExpiresAt.IsZero() {
		s.idempotency[a.id+"\x00"+r.IdempotencyKey] = idempotencyEntry{statusID: num, expires: r.IdempotencyExpiresAt}
	}
	if cr != nil {
		// The create's fingerprint is the committed one (see
		// wouldBeFingerprintLocked).
		cr.Committed, cr.StatusID, cr.Fingerprint = true, st.ID, st.Fingerprint
	}
	return nil
}

func (s *Server) replayReplayLocked(r *replayRec) error {
	if s.findStatusLocked(r.StatusID) == nil {
		return fmt.Errorf("replay: no live status %q", r.StatusID)
	}
	if r.Seq != 0 {
		cr, err := s.createRecordLocked(r.Seq)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		cr.StatusID, cr.Fingerprint = r.StatusID, r.Fingerprint
	}
	s.stats.IdempotentReplays++
	return nil
}

func (s *Server) replayMediaLocked(r *mediaRec) error {
	if r.ID == "" || s.media[r.ID] != nil {
		return fmt.Errorf("media: id %q is empty or taken", r.ID)
	}
	if s.accounts[r.Account] == nil {
		return fmt.Errorf("media %s: unknown account %q", r.ID, r.Account)
	}
	s.media[r.ID] = &media{
		id: r.ID, accountID: r.Account, data: r.Data, contentType: r.ContentType,
		description: r.Description, sha256: r.SHA256, pollsLeft: r.PollsLeft,
	}
	s.bumpIDLocked(r.ID)
	return nil
}

func (s *Server) replayAppLocked(r *appRec) error {
	if r.ClientID == "" || s.apps[r.ClientID] != nil {
		return fmt.Errorf("app %s: client id is empty or taken", r.ID)
	}
	s.apps[r.ClientID] = &app{
		id: r.ID, name: r.Name, website: r.Website, redirectURIs: r.RedirectURIs, scopes: r.Scopes,
		clientID: r.ClientID, clientSecret: r.ClientSecret, createdAt: r.CreatedAt,
	}
	s.bumpIDLocked(r.ID)
	return nil
}

func (s *Server) replayCodeLocked(r *codeRec) error {
	if r.Code == "" {
		return errors.New("code: empty code")
	}
	if s.apps[r.ClientID] == nil {
		return fmt.Errorf("code: unknown client %q", r.ClientID)
	}
	if s.accounts[r.Account] == nil {
		return fmt.Errorf("code: unknown account %q", r.Account)
	}
	s.codes[r.Code] = &authCode{
		clientID: r.ClientID, redirectURI: r.RedirectURI, scope: r.Scope, accountID: r.Account, expiresAt: r.ExpiresAt,
	}
	return nil
}
