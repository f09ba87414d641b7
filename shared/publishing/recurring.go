package publishing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/recurring"
)

// Recurring posts (docs/recurring.md): a rule repeats a post on a
// schedule, and each occurrence becomes a post of its own, scheduled
// through the Desk like any other (full validation, its own targets and
// ledger keys) under an id derived from the rule and the slot, so that
// creating it twice is a conflict, never a second post. The materializer
// (Materialize, run by the sweeper every minute and after every write of
// a rule) creates the occurrences due within Horizon.

// RecurringRules persists recurring rules. Every adapter passes
// publishingtest.TestRecurringRules.
type RecurringRules interface {
	// CreateRule stores a new rule with Version 1, whatever r.Version
	// says; an error wrapping post.ErrConflict if a rule has its id.
	CreateRule(ctx context.Context, r recurring.Rule) error
	// GetRule reads a rule (strongly consistent); an error wrapping
	// post.ErrNotFound if there is none.
	GetRule(ctx context.Context, id recurring.ID) (recurring.Rule, error)
	// UpdateRule replaces the stored rule by r, with Version r.Version+1,
	// if the stored rule's Version is r.Version (the version r was read
	// at); an error wrapping post.ErrConflict otherwise, also when there
	// is no such rule.
	UpdateRule(ctx context.Context, r recurring.Rule) error
	// ListRules lists every rule, by id.
	ListRules(ctx context.Context) ([]recurring.Rule, error)
}

// DefaultHorizon is how far ahead the materializer creates occurrences:
// the next two days' posts exist as posts (the operator sees them in the
// calendar and can cancel one), and a sweeper that stops for less than
// that loses none (their schedules fire without it).
const DefaultHorizon = 48 * time.Hour

// retireSlack widens the window of an edited rule's old occurrences past
// the horizon: a materializer whose clock runs a little ahead may have
// created that far.
const retireSlack = 10 * time.Minute

// Recurring is the use cases of recurring rules: create, edit, stop,
// list, show, and the materializer.
type Recurring struct {
	Rules RecurringRules
	// Desk schedules the occurrences (Schedule, with its validation) and
	// validates rules' content; its Posts, Ledger, Lister, Scheduler and
	// clock are used too.
	Desk *Desk
	// Horizon is how far ahead occurrences are created; default
	// DefaultHorizon.
	Horizon time.Duration
	Logger  *slog.Logger
	// IDs names an occurrence's post; nil: recurring.Rule.OccurrenceID.
	// Tests replace it to show that a materializer without deterministic
	// ids posts twice.
	IDs func(r recurring.Rule, slot time.Time) post.ID
}

func (m *Recurring) now() time.Time { return m.Desk.now() }

func (m *Recurring) log() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return m.Desk.log()
}

func (m *Recurring) horizon() time.Duration { return orDefault(m.Horizon, DefaultHorizon) }

func (m *Recurring) id(r recurring.Rule, slot time.Time) post.ID {
	if m.IDs != nil {
		return m.IDs(r, slot)
	}
	return r.OccurrenceID(slot)
}

// NewRuleID is a generated rule id: "r-", the date and time of now as
// given and four random letters or digits.
func NewRuleID(now time.Time) string {
	return "r-" + now.Format("20060102-150405") + "-" + strings.ToLower(rand.Text()[:4])
}

// ErrRuleStopped is returned (wrapped) for an edit of a stopped rule.
var ErrRuleStopped = errors.New("the rule is stopped")

// ErrRuleChanged is returned (wrapped) when a rule was written by
// someone else between the read and the write of an edit or a stop:
// nothing was written; look again.
var ErrRuleChanged = errors.New("the rule was changed meanwhile")

// RuleOptions are the circumstances of a create.
type RuleOptions struct {
	// Author is who writes the rule.
	Author string
	// Sizes are the bytes of attachments not stored yet, by ref (as
	// Desk.Validate's).
	Sizes map[string]int
	// Key, if set, is the create's idempotency key with its scope and
	// request fingerprint: a rule without an id gets one derived from
	// the scope and key, and a retry with the same key and fingerprint is
	// answered with the rule the first made.
	Key *KeyedRequest
}

// RuleView is a rule with its next occurrences, as the surfaces show it.
type RuleView struct {
	Rule recurring.Rule `json:"rule"`
	// Summary says the repeat rule in words.
	Summary string `json:"summary"`
	// Next are the next occurrences from now (at most NextShown).
	Next []OccurrenceView `json:"next"`
	// Recent are the latest occurrences before now, latest first (Show
	// only).
	Recent []OccurrenceView `json:"recent,omitempty"`
	// Replayed: a create's key had made the rule before; nothing was
	// written now.
	Replayed bool `json:"-"`
}

// OccurrenceView is one occurrence: its slot, the post it is (or will
// be), and that post's targets once it exists.
type OccurrenceView struct {
	Slot time.Time `json:"slot"`
	Post post.ID   `json:"post_id"`
	// Text is the body it goes out with (a platform's own text aside).
	Text string `json:"text"`
	// Created: the post exists; Targets are its targets then.
	Created bool          `json:"created"`
	Targets []post.Target `json:"targets,omitempty"`
	// Kept: an earlier revision's occurrence holds the slot.
	Kept bool `json:"kept,omitempty"`
}

// NextShown is how many next occurrences a view holds.
const NextShown = 5

// Create validates a draft (CheckRule) and stores the rule, then
// creates its occurrences due within the horizon. A refusal is an error
// joining *post.FieldError; an id that exists is refused on "id" (unless
// the same keyed request made it: then it is answered again).
func (m *Recurring) Create(ctx context.Context, d recurring.Draft, opts RuleOptions) (RuleView, error) {
	now := m.now()
	// A keyed create records its key (hashed) and its request's
	// fingerprint: a retry with both is answered with the rule, the key
	// with another request is ErrKeyReused, anything else meeting the id
	// is refused on "id".
	keyHash, fingerprint := "", ""
	if k := opts.Key; k != nil {
		sum := sha256.Sum256([]byte(k.Scope + "\x00" + k.Key))
		keyHash = hex.EncodeToString(sum[:10])
		fingerprint = keyHash + ":" + k.Fingerprint
		if d.ID == "" {
			d.ID = "r-" + keyHash
		}
	}
	if d.ID == "" {
		d.ID = NewRuleID(now)
	}
	r, err := m.CheckRule(ctx, d, nil, opts.Sizes)
	if err != nil {
		return RuleView{}, err
	}
	r.Author, r.Fingerprint = opts.Author, fingerprint
	err = m.Rules.CreateRule(ctx, r)
	if errors.Is(err, post.ErrConflict) {
		stored, gerr := m.Rules.GetRule(ctx, r.ID)
		if gerr == nil && fingerprint != "" && stored.Fingerprint == fingerprint {
			v, err := m.view(ctx, stored, false)
			v.Replayed = true
			return v, err
		}
		if gerr == nil && keyHash != "" && strings.HasPrefix(stored.Fingerprint, keyHash+":") {
			return RuleView{}, fmt.Errorf("rule %s: idempotency key %q was used for another request: %w", r.ID, opts.Key.Key, ErrKeyReused)
		}
		return RuleView{}, fmt.Errorf("rule %q refused: %w", r.ID, &post.FieldError{Field: "id", Problem: fmt.Sprintf("rule %q exists already", r.ID),
			Fix: "pick another id, or edit that rule"})
	}
	if err != nil {
		return RuleView{}, fmt.Errorf("create rule %s: %w", r.ID, err)
	}
	r.Version = 1
	m.log().InfoContext(ctx, "recurring rule created", "rule", string(r.ID), "repeat", r.Describe())
	if _, err := m.materializeRule(ctx, r, now); err != nil {
		m.log().ErrorContext(ctx, "materialize new rule", "rule", string(r.ID), "err", err)
	}
	return m.Show(ctx, r.ID)
}

// CheckRule validates a draft as a rule (revision 1, or the revision
// after prev when an edit of prev): its shape (recurring.Draft.Parse),
// its content as each of its texts would go out (Desk.Validate of an
// occurrence, errors named by the rule's fields), and the platforms'
// duplicate-content rules: a rule whose occurrences would send the same
// text to an account on a platform that refuses it within its
// DuplicateWindow is refused, naming the field and the account.
func (m *Recurring) CheckRule(ctx context.Context, d recurring.Draft, prev *recurring.Rule, sizes map[string]int) (recurring.Rule, error) {
	now := m.now()
	rules, err := m.Desk.rules(ctx)
	if err != nil {
		return recurring.Rule{}, err
	}
	r, err := d.Parse(recurring.Env{Accounts: rules.Accounts, Now: now})
	if err != nil {
		return recurring.Rule{}, err
	}
	if prev != nil {
		r.Revision, r.CreatedAt, r.Author, r.Fingerprint, r.Missed = prev.Revision+1, prev.CreatedAt, prev.Author, prev.Fingerprint, prev.Missed
	}
	s, err := r.Schedule()
	if err != nil {
		return recurring.Rule{}, err
	}
	upcoming := s.After(s.Position(recurring.Position{}, now), now.AddDate(1, 0, 0), 1000)
	if len(upcoming) == 0 {
		return recurring.Rule{}, fmt.Errorf("rule %q refused: %w", r.ID, &post.FieldError{Field: "start", Problem: "the rule has no occurrence in the coming year",
			Fix: "start it within a year"})
	}
	var errs []error
	// Each text once, as an occurrence: the first with everything, the
	// variants for their own field.
	for k := range r.Rotation() {
		dr := occurrenceDraft(r, r.OccurrenceID(upcoming[0].Slot), recurring.Occurrence{Index: k, Slot: upcoming[0].Slot})
		_, err := m.Desk.Validate(ctx, dr, sizes)
		fes := FieldErrors(err)
		if err != nil && len(fes) == 0 {
			return recurring.Rule{}, err
		}
		for _, fe := range fes {
			f := *fe
			switch {
			case f.Field == "body" && k > 0:
				f.Field = fmt.Sprintf("variants[%d]", k-1)
			case k > 0:
				continue // said for the body already
			case strings.HasPrefix(f.Field, "targets["):
				i, rest, _ := strings.Cut(strings.TrimPrefix(f.Field, "targets["), "]")
				f.Field = "accounts[" + i + "]" + strings.TrimPrefix(rest, ".account")
			}
			errs = append(errs, &f)
		}
	}
	errs = append(errs, m.duplicateRisks(r, rules.Accounts, upcoming)...)
	if len(errs) > 0 {
		return recurring.Rule{}, fmt.Errorf("rule %q refused: %w", r.ID, errors.Join(errs...))
	}
	return r, nil
}

// duplicateRisks are the refusals of a rule whose occurrences would send
// the same text to an account within its platform's DuplicateWindow.
func (m *Recurring) duplicateRisks(r recurring.Rule, accounts map[post.AccountID]post.Account, upcoming []recurring.Occurrence) []error {
	var errs []error
	said := map[string]bool{}
	loc := r.Location()
	for _, id := range r.Accounts {
		acc := accounts[id]
		caps, _ := m.Desk.capabilities(acc.Platform)
		window := caps.DuplicateWindow
		if window <= 0 {
			continue
		}
		c, found := recurring.FirstClash(upcoming, window, func(k int) string { t, _ := r.TextAt(acc.Platform, k); return t })
		if !found {
			continue
		}
		text, field := r.TextAt(acc.Platform, c.Second.Index)
		if strings.HasPrefix(field, "variants[") || field == "body" {
			field = "variants"
		}
		if said[field+"/"+string(id)] {
			continue
		}
		said[field+"/"+string(id)] = true
		need := recurring.MostWithin(upcoming, window)
		variants := fmt.Sprintf("%d variants", need-1)
		if need == 2 {
			variants = "1 variant"
		}
		fix := fmt.Sprintf("give at least %d texts that take turns (the body and %s) so that none repeats within %s, or repeat at least %s apart",
			need, variants, hours(window), hours(window))
		if strings.HasPrefix(field, "texts.") {
			fix = fmt.Sprintf("remove %s so that %s gets the body and its variants in turn (at least %d texts), or repeat at least %s apart",
				field, acc.Platform, need, hours(window))
		}
		errs = append(errs, &post.FieldError{Field: field,
			Problem: fmt.Sprintf("occurrences at %s and %s would both send %q to %s, and %s refuses the same text from one account within %s",
				c.First.Slot.In(loc).Format("2006-01-02 15:04 MST"), c.Second.Slot.In(loc).Format("2006-01-02 15:04 MST"), shorten(text), id, acc.Platform, hours(window)),
			Fix: fix})
	}
	return errs
}

// hours says a duration in whole hours ("48 h") when it is one.
func hours(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return d.String()
}

// shorten cuts a text for a message.
func shorten(s string) string {
	const keep = 40
	r := []rune(s)
	if len(r) <= keep {
		return s
	}
	return string(r[:keep]) + "…"
}

// occurrenceDraft is the post of occurrence o of r, under id.
func occurrenceDraft(r recurring.Rule, id post.ID, o recurring.Occurrence) post.Draft {
	// The rule's author is each occurrence's: an approval policy that
	// forbids approving one's own posts holds for them too.
	d := post.Draft{ID: string(id), Body: r.BodyAt(o.Index), Texts: maps.Clone(r.Texts), Author: r.Author}
	for _, md := range r.Media {
		d.Media = append(d.Media, post.DraftMedia{Media: md})
	}
	at := o.Slot.UTC().Format(time.RFC3339)
	for _, a := range r.Accounts {
		d.Targets = append(d.Targets, post.DraftTarget{Account: string(a), At: at})
	}
	return d
}

// Edit changes a rule (patch over recurring.DraftOf of the stored one),
// validated as a new rule (CheckRule). It makes a new revision: the
// occurrences whose slot has passed are never created again, and those
// of the old revision still to come are cancelled and replaced by the
// new revision's (one the publisher is already sending is kept, and the
// new revision makes none at its slot). An empty patch changes nothing.
// A stopped rule is refused (ErrRuleStopped); a rule written meanwhile
// is ErrRuleChanged.
func (m *Recurring) Edit(ctx context.Context, id recurring.ID, patch recurring.Patch, sizes map[string]int) (RuleView, error) {
	old, err := m.settled(ctx, id)
	if err != nil {
		return RuleView{}, err
	}
	if !old.Active() {
		return RuleView{}, fmt.Errorf("edit rule %s: %w since %s; create a new rule", id, ErrRuleStopped, old.StoppedAt.UTC().Format(time.RFC3339))
	}
	if patch.Empty() {
		return m.Show(ctx, id)
	}
	now := m.now()
	next, err := m.CheckRule(ctx, patch.Apply(recurring.DraftOf(old)), &old, sizes)
	if err != nil {
		return RuleView{}, err
	}
	next.Version = old.Version
	m.replace(&next, old, now)
	if err := m.Rules.UpdateRule(ctx, next); errors.Is(err, post.ErrConflict) {
		return RuleView{}, fmt.Errorf("edit rule %s: %w; look at it again", id, ErrRuleChanged)
	} else if err != nil {
		return RuleView{}, fmt.Errorf("edit rule %s: %w", id, err)
	}
	next.Version++
	m.log().InfoContext(ctx, "recurring rule edited", "rule", string(id), "revision", next.Revision, "repeat", next.Describe())
	if _, err := m.materializeRule(ctx, next, now); err != nil {
		m.log().ErrorContext(ctx, "materialize edited rule", "rule", string(id), "err", err)
	}
	return m.Show(ctx, id)
}

// Stop stops a rule: no occurrence is created any more, and those still
// to come are cancelled (one being sent is kept). Stopping twice is done.
func (m *Recurring) Stop(ctx context.Context, id recurring.ID) (RuleView, error) {
	old, err := m.settled(ctx, id)
	if err != nil {
		return RuleView{}, err
	}
	if !old.Active() {
		return m.Show(ctx, id)
	}
	now := m.now()
	next := old
	next.Revision++
	next.StoppedAt = now.UTC()
	m.replace(&next, old, now)
	if err := m.Rules.UpdateRule(ctx, next); errors.Is(err, post.ErrConflict) {
		return RuleView{}, fmt.Errorf("stop rule %s: %w; look at it again", id, ErrRuleChanged)
	} else if err != nil {
		return RuleView{}, fmt.Errorf("stop rule %s: %w", id, err)
	}
	next.Version++
	m.log().InfoContext(ctx, "recurring rule stopped", "rule", string(id))
	if _, err := m.materializeRule(ctx, next, now); err != nil {
		m.log().ErrorContext(ctx, "cancel the stopped rule's occurrences", "rule", string(id), "err", err)
	}
	return m.Show(ctx, id)
}

// settled reads a rule with no earlier revision left to retire (it
// retires one first).
func (m *Recurring) settled(ctx context.Context, id recurring.ID) (recurring.Rule, error) {
	r, err := m.Rules.GetRule(ctx, id)
	if err != nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, err)
	}
	if r.Retiring == nil {
		return r, nil
	}
	if _, _, err := m.retireRule(ctx, r, m.now()); err != nil && !errors.Is(err, post.ErrConflict) {
		return recurring.Rule{}, err
	}
	if r, err = m.Rules.GetRule(ctx, id); err != nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, err)
	}
	if r.Retiring != nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w; look at it again", id, ErrRuleChanged)
	}
	return r, nil
}

// replace makes next the revision after old at now: old's occurrences
// after now are to be retired, and next's are created from its first
// occurrence after now (none before).
func (m *Recurring) replace(next *recurring.Rule, old recurring.Rule, now time.Time) {
	prev := old
	prev.Retiring, prev.Keep, prev.Problem, prev.Missed = nil, nil, nil, nil
	through := now.Add(m.horizon() + retireSlack)
	if old.Through.Slot.After(through) {
		through = old.Through.Slot
	}
	next.Retiring = &recurring.Retiring{Rule: prev, From: now.UTC(), Through: through.UTC()}
	next.Keep, next.Problem = nil, nil
	next.UpdatedAt = now.UTC()
	next.Through = recurring.Position{}
	if s, err := next.Schedule(); err == nil {
		next.Through = s.Position(recurring.Position{}, now)
	}
}

// MaterializeReport is what one pass of the materializer did.
type MaterializeReport struct {
	// Rules counts the rules looked at that still make occurrences.
	Rules int `json:"rules"`
	// Created counts occurrences created; Problems those that could not
	// be (each rule's Problem says why); Missed those whose time passed
	// before they could be; Cancelled old revisions' occurrences
	// cancelled after an edit or a stop.
	Created   int `json:"created"`
	Problems  int `json:"problems"`
	Missed    int `json:"missed"`
	Cancelled int `json:"cancelled"`
}

func (a *MaterializeReport) add(b MaterializeReport) {
	a.Rules += b.Rules
	a.Created += b.Created
	a.Problems += b.Problems
	a.Missed += b.Missed
	a.Cancelled += b.Cancelled
}

// Materialize creates, for every rule, the occurrences due within the
// horizon that do not exist yet, and finishes what edits and stops left
// to do. Safe to run anywhere at any time, and concurrently: an
// occurrence's id is its rule's, revision's and slot's, so a second
// creation is a conflict. An error (a rule that could not be read or
// written) stops only that rule; the others go on.
func (m *Recurring) Materialize(ctx context.Context) (MaterializeReport, error) {
	now := m.now()
	rules, err := m.Rules.ListRules(ctx)
	if err != nil {
		return MaterializeReport{}, fmt.Errorf("materialize: list rules: %w", err)
	}
	var rep MaterializeReport
	var errs []error
	for _, r := range rules {
		if !r.Active() && r.Retiring == nil {
			continue
		}
		one, err := m.materializeRule(ctx, r, now)
		rep.add(one)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

// materializeRule retires r's earlier revision if it has one, then
// creates r's occurrences due by now+horizon, and records how far it got.
func (m *Recurring) materializeRule(ctx context.Context, r recurring.Rule, now time.Time) (MaterializeReport, error) {
	var rep MaterializeReport
	if r.Retiring != nil {
		next, n, err := m.retireRule(ctx, r, now)
		rep.Cancelled += n
		if errors.Is(err, post.ErrConflict) {
			// Written meanwhile: the next run reads it again.
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
		r = next
	}
	if !r.Active() {
		return rep, nil
	}
	rep.Rules = 1
	s, err := r.Schedule()
	if err != nil {
		return rep, fmt.Errorf("materialize rule %s: %w", r.ID, err)
	}
	next := r
	prefix := true // every occurrence so far is settled
	var problem *recurring.Problem
	for _, o := range s.After(r.Through, now.Add(m.horizon()), 0) {
		settled, created, why, err := m.occurrence(ctx, r, o, now)
		if err != nil {
			return rep, err
		}
		switch {
		case created:
			rep.Created++
		case settled && why != "":
			rep.Missed++
			next.Missed = append(next.Missed, recurring.Problem{Slot: o.Slot, Reason: why, At: now.UTC()})
			if len(next.Missed) > recurring.MaxMissed {
				next.Missed = next.Missed[len(next.Missed)-recurring.MaxMissed:]
			}
			m.log().ErrorContext(ctx, "recurring occurrence missed", "rule", string(r.ID), "slot", o.Slot.UTC().Format(time.RFC3339), "reason", why)
		case !settled:
			rep.Problems++
			if problem == nil {
				problem = &recurring.Problem{Slot: o.Slot, Reason: why, At: now.UTC()}
			}
		}
		if settled && prefix {
			next.Through = o
		}
		prefix = prefix && settled
	}
	if problem != nil && (r.Problem == nil || r.Problem.Reason != problem.Reason || !r.Problem.Slot.Equal(problem.Slot)) {
		m.log().ErrorContext(ctx, "recurring occurrence could not be created", "rule", string(r.ID), "slot", problem.Slot.UTC().Format(time.RFC3339),
			"reason", problem.Reason)
	}
	if problem != nil && r.Problem != nil && r.Problem.Slot.Equal(problem.Slot) && r.Problem.Reason == problem.Reason {
		problem = r.Problem // unchanged: no write for it
	}
	next.Problem = problem
	next.Keep = slices.DeleteFunc(slices.Clone(next.Keep), func(t time.Time) bool { return !t.After(now) })
	if next.Through == r.Through && samePtrProblem(next.Problem, r.Problem) && len(next.Missed) == len(r.Missed) && len(next.Keep) == len(r.Keep) {
		return rep, nil
	}
	if err := m.Rules.UpdateRule(ctx, next); errors.Is(err, post.ErrConflict) {
		// Written meanwhile (an edit, another materializer): the next run
		// reads it again; what was created stays created.
		m.log().DebugContext(ctx, "rule changed while materializing", "rule", string(r.ID))
	} else if err != nil {
		return rep, fmt.Errorf("materialize rule %s: record progress: %w", r.ID, err)
	}
	return rep, nil
}

func samePtrProblem(a, b *recurring.Problem) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Slot.Equal(b.Slot) && a.Reason == b.Reason
}

// occurrence creates occurrence o of r if it is due and does not exist.
// settled: nothing is left to do for it (created now or before, kept by
// an earlier revision, or missed, with why saying so); otherwise why
// says what refused it.
func (m *Recurring) occurrence(ctx context.Context, r recurring.Rule, o recurring.Occurrence, now time.Time) (settled, created bool, why string, err error) {
	if !o.Slot.After(now) {
		why = "its time passed before it was created"
		if r.Problem != nil && r.Problem.Slot.Equal(o.Slot) {
			why += ": " + r.Problem.Reason
		}
		return true, false, why, nil
	}
	if slices.ContainsFunc(r.Keep, o.Slot.Equal) {
		return true, false, "", nil
	}
	id := m.id(r, o.Slot)
	if _, err := m.Desk.Posts.GetPost(ctx, id); err == nil {
		return true, false, "", nil
	} else if !errors.Is(err, post.ErrNotFound) {
		return false, false, "", fmt.Errorf("occurrence %s: %w", id, err)
	}
	if clash, err := m.duplicateInStore(ctx, r, id, o); err != nil {
		return false, false, "", err
	} else if clash != "" {
		return false, false, clash, nil
	}
	_, err = m.Desk.Schedule(ctx, occurrenceDraft(r, id, o), nil, nil)
	fes := FieldErrors(err)
	switch {
	case err == nil:
		m.log().InfoContext(ctx, "recurring occurrence created", "rule", string(r.ID), "post", string(id), "slot", o.Slot.UTC().Format(time.RFC3339))
		return true, true, "", nil
	case len(fes) == 1 && fes[0].Field == "id":
		// The id is taken: settled only if the post can be read. A
		// creation that stopped half-way (a function killed inside
		// CreatePost) also takes the id, and is taken over by a later
		// create once it is stale: until then the occurrence stays to
		// do, and says why.
		switch _, gerr := m.Desk.Posts.GetPost(ctx, id); {
		case gerr == nil:
			return true, false, "", nil // created meanwhile
		case errors.Is(gerr, post.ErrNotFound):
			return false, false, fmt.Sprintf("post %s is being created by another call (or one that stopped half-way, taken over once stale); tried again at the next sweep", id), nil
		default:
			return false, false, "", fmt.Errorf("occurrence %s: %w", id, gerr)
		}
	case len(fes) > 0:
		return false, false, err.Error(), nil
	}
	return false, false, "", fmt.Errorf("occurrence %s: %w", id, err)
}

// liveStatuses are the statuses of a target that was or may still be
// sent: what a platform's duplicate rule can meet.
var liveStatuses = []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Waiting, post.Publishing, post.Published, post.Held}

// duplicateInStore says why occurrence o (post id) would meet a
// platform's duplicate rule with a post already in the store (another
// occurrence, of an earlier revision, or any post) on one of its
// accounts; "" if it would not.
func (m *Recurring) duplicateInStore(ctx context.Context, r recurring.Rule, id post.ID, o recurring.Occurrence) (string, error) {
	if m.Desk.Lister == nil {
		return "", nil
	}
	for _, a := range r.Accounts {
		acc, err := m.Desk.Accounts.GetAccount(ctx, a)
		if err != nil {
			return "", fmt.Errorf("occurrence %s: account %s: %w", id, a, err)
		}
		caps, _ := m.Desk.capabilities(acc.Platform)
		window := caps.DuplicateWindow
		if window <= 0 {
			continue
		}
		text, _ := r.TextAt(acc.Platform, o.Index)
		key := recurring.DuplicateKey(text)
		if key == "" {
			continue
		}
		f := PostFilter{Account: a, Statuses: liveStatuses, From: o.Slot.Add(-window + time.Nanosecond), To: o.Slot.Add(window), Limit: 100}
		for range 20 {
			page, err := m.Desk.Lister.ListPostPage(ctx, f)
			if err != nil {
				return "", fmt.Errorf("occurrence %s: posts near it on %s: %w", id, a, err)
			}
			for _, p := range page.Posts {
				t, ok := p.Target(a)
				if !ok || p.ID == id || !slices.Contains(liveStatuses, t.Status) || absDuration(t.Slot.Sub(o.Slot)) >= window {
					continue
				}
				if recurring.DuplicateKey(p.TextFor(acc.Platform)) == key {
					return fmt.Sprintf("post %s sends the same text to %s at %s, and %s refuses the same text from one account within %s",
						p.ID, a, t.Slot.UTC().Format(time.RFC3339), acc.Platform, hours(window)), nil
				}
			}
			if page.Next == "" {
				break
			}
			f.After = page.Next
		}
	}
	return "", nil
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// replacedReason is the reason of an old revision's occurrence cancelled
// because a new revision (or a stop) replaced it.
func replacedReason(r recurring.Rule, revision int) string {
	return fmt.Sprintf("replaced by revision %d of recurring rule %s", revision, r.ID)
}

// retireRule cancels the occurrences of r's earlier revision
// (r.Retiring) after the edit, records the slots it had to keep, and
// stores r without Retiring. It returns r as stored.
func (m *Recurring) retireRule(ctx context.Context, r recurring.Rule, now time.Time) (recurring.Rule, int, error) {
	kept, n, err := m.retire(ctx, r, now)
	if err != nil {
		return r, n, err
	}
	next := r
	next.Retiring = nil
	for _, k := range kept {
		if !slices.ContainsFunc(next.Keep, k.Equal) {
			next.Keep = append(next.Keep, k)
		}
	}
	if err := m.Rules.UpdateRule(ctx, next); err != nil {
		return r, n, fmt.Errorf("rule %s: record the retired revision %d: %w", r.ID, r.Retiring.Rule.Revision, err)
	}
	next.Version++
	return next, n, nil
}

// retire cancels the occurrences of r.Retiring's revision whose slot is
// after its From: every one that exists and is not sent yet, and every
// one not created yet up to Through is created cancelled, so that a
// materializer still holding that revision cannot create it. It returns
// the slots whose occurrence was kept (being sent or sent, or skipped by
// an operator) and how many it cancelled. Safe to repeat.
func (m *Recurring) retire(ctx context.Context, r recurring.Rule, now time.Time) ([]time.Time, int, error) {
	ret := r.Retiring
	old := ret.Rule
	s, err := old.Schedule()
	if err != nil {
		return nil, 0, fmt.Errorf("rule %s: retire revision %d: %w", r.ID, old.Revision, err)
	}
	from := s.Position(recurring.Position{}, ret.From)
	if !old.Through.IsZero() && !old.Through.Slot.After(ret.From) {
		from = s.Position(old.Through, ret.From)
	}
	reason := replacedReason(r, r.Revision)
	var kept []time.Time
	cancelled := 0
	for _, o := range s.After(from, ret.Through, 0) {
		id := m.id(old, o.Slot)
		keep, n, err := m.retireOccurrence(ctx, old, id, o, reason, now)
		if err != nil {
			return nil, cancelled, fmt.Errorf("rule %s: retire occurrence %s: %w", r.ID, id, err)
		}
		cancelled += n
		if keep {
			kept = append(kept, o.Slot)
		}
	}
	if cancelled > 0 || len(kept) > 0 {
		m.log().InfoContext(ctx, "recurring rule's old occurrences retired", "rule", string(r.ID), "revision", old.Revision, "cancelled", cancelled, "kept", len(kept))
	}
	return kept, cancelled, nil
}

// retireOccurrence cancels one old occurrence (or writes it cancelled
// when it does not exist) and reports whether its slot is kept.
func (m *Recurring) retireOccurrence(ctx context.Context, old recurring.Rule, id post.ID, o recurring.Occurrence, reason string, now time.Time) (keep bool, cancelled int, err error) {
	for range 5 {
		p, err := m.Desk.Posts.GetPost(ctx, id)
		if errors.Is(err, post.ErrNotFound) {
			err = m.Desk.Posts.CreatePost(ctx, tombstone(old, id, o, reason, now))
			if errors.Is(err, post.ErrConflict) {
				continue // created meanwhile: cancel it
			}
			return false, 0, err
		}
		if err != nil {
			return false, 0, err
		}
		retry := false
		for _, t := range p.Targets {
			switch {
			case t.Status == post.Cancelled && t.Reason == reason:
			case t.Status == post.Cancelled:
				keep = true // skipped by an operator: it stays skipped
			case t.Status == post.Scheduled || t.Status == post.NeedsApproval:
				// A publisher that prepared it (its entry written before
				// the re-read) is left to send it: the slot stays the old
				// one's.
				if sending, err := m.inFlight(ctx, p.ID, t); err != nil {
					return false, cancelled, err
				} else if sending {
					keep = true
					continue
				}
				_, err := m.Desk.Posts.UpdateTarget(ctx, p.ID, t.Account, post.TargetUpdate{Status: post.Cancelled, Reason: reason,
					From: []post.TargetStatus{post.Scheduled, post.NeedsApproval}, Slot: t.Slot, At: now})
				if errors.Is(err, post.ErrConflict) {
					retry = true
					continue
				}
				if err != nil {
					return false, cancelled, err
				}
				cancelled++
				m.Desk.Scheduler.Cancelled(ctx, TargetRef{Post: p.ID, Account: t.Account, Slot: t.Slot})
				// A publisher that prepared it meanwhile and was past its
				// re-read may be sending it: then the slot is the old one's.
				if sending, err := m.inFlight(ctx, p.ID, t); err != nil {
					return false, cancelled, err
				} else if sending {
					keep = true
				}
			default:
				keep = true // being sent, sent, or decided: never replaced
			}
		}
		if !retry {
			return keep, cancelled, nil
		}
		keep = false
	}
	return true, cancelled, errors.New("its targets kept changing; the slot is left to it")
}

// inFlight reports whether a publish of the target may be under way or
// done: its ledger entry is pending, unknown or confirmed.
func (m *Recurring) inFlight(ctx context.Context, id post.ID, t post.Target) (bool, error) {
	e, err := m.Desk.Ledger.Get(ctx, ledger.PublishKey(string(t.Account), string(id), t.Slot))
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return e.State == ledger.Pending || e.State == ledger.Unknown || e.State == ledger.Confirmed, nil
}

// tombstone is an old revision's occurrence that was never created,
// written cancelled.
func tombstone(old recurring.Rule, id post.ID, o recurring.Occurrence, reason string, now time.Time) post.Post {
	p := post.Post{ID: id, Body: old.BodyAt(o.Index), Texts: maps.Clone(old.Texts), Media: slices.Clone(old.Media), CreatedAt: now.UTC()}
	for _, a := range old.Accounts {
		p.Targets = append(p.Targets, post.Target{Account: a, Slot: o.Slot.UTC(), Status: post.Cancelled, Reason: reason, UpdatedAt: now.UTC()})
	}
	return p
}

// List lists every rule with its next occurrences (and the posts made
// for them).
func (m *Recurring) List(ctx context.Context) ([]RuleView, error) {
	rules, err := m.Rules.ListRules(ctx)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	out := make([]RuleView, 0, len(rules))
	for _, r := range rules {
		v, err := m.view(ctx, r, false)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Show reads a rule with its next occurrences and its latest ones, each
// with its post's targets; an error wrapping post.ErrNotFound for an
// unknown rule.
func (m *Recurring) Show(ctx context.Context, id recurring.ID) (RuleView, error) {
	r, err := m.Rules.GetRule(ctx, id)
	if err != nil {
		return RuleView{}, fmt.Errorf("show rule %s: %w", id, err)
	}
	return m.view(ctx, r, true)
}

// view is r with its next occurrences and their posts; full: with the
// recent ones too.
func (m *Recurring) view(ctx context.Context, r recurring.Rule, full bool) (RuleView, error) {
	v := RuleView{Rule: r, Summary: r.Describe(), Next: []OccurrenceView{}}
	s, err := r.Schedule()
	if err != nil {
		return v, nil // shown without occurrences
	}
	now := m.now()
	at := s.Position(r.Through, now)
	if r.Through.Slot.After(now) {
		at = s.Position(recurring.Position{}, now)
	}
	if r.Active() {
		for _, o := range s.After(at, time.Date(post.MaxSlotYear, 12, 31, 0, 0, 0, 0, time.UTC), NextShown) {
			ov := OccurrenceView{Slot: o.Slot, Post: m.id(r, o.Slot), Text: r.BodyAt(o.Index), Kept: slices.ContainsFunc(r.Keep, o.Slot.Equal)}
			if !o.Slot.After(now.Add(m.horizon() + retireSlack)) {
				if err := m.fill(ctx, &ov, r.Revision, r.ID); err != nil {
					return v, err
				}
			}
			v.Next = append(v.Next, ov)
		}
	}
	if !full {
		return v, nil
	}
	// The latest occurrences before now, of whichever revision made them.
	var past []recurring.Occurrence
	p := recurring.Position{}
	for {
		o := s.After(p, now, 256)
		if len(o) == 0 {
			break
		}
		past = append(past, o...)
		if len(past) > NextShown {
			past = past[len(past)-NextShown:]
		}
		p = o[len(o)-1]
	}
	for i := len(past) - 1; i >= 0; i-- {
		o := past[i]
		ov := OccurrenceView{Slot: o.Slot, Post: m.id(r, o.Slot), Text: r.BodyAt(o.Index)}
		if err := m.fill(ctx, &ov, r.Revision, r.ID); err != nil {
			return v, err
		}
		v.Recent = append(v.Recent, ov)
	}
	return v, nil
}

// fill finds the post of an occurrence view: this revision's, or the
// latest earlier revision's at the same slot.
func (m *Recurring) fill(ctx context.Context, ov *OccurrenceView, revision int, rule recurring.ID) error {
	ids := []post.ID{ov.Post}
	for rev := revision - 1; rev >= 1; rev-- {
		ids = append(ids, recurring.OccurrenceID(rule, rev, ov.Slot))
	}
	for _, id := range ids {
		p, err := m.Desk.Posts.GetPost(ctx, id)
		if errors.Is(err, post.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("occurrence %s: %w", id, err)
		}
		ov.Post, ov.Created, ov.Targets, ov.Text = p.ID, true, p.Targets, p.Body
		return nil
	}
	return nil
}
