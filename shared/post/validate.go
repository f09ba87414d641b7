package post

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"oncepost/shared/graphemes"
)

// FieldError is a refused input: which field, what is wrong, how to fix it.
type FieldError struct {
	// Field is the JSON path of the field, e.g. "targets[1].at".
	Field   string
	Problem string
	Fix     string
}

func (e *FieldError) Error() string {
	if e.Fix == "" {
		return e.Field + ": " + e.Problem
	}
	return e.Field + ": " + e.Problem + "; " + e.Fix
}

// Draft is a post as an operator writes it: times are text and must carry
// a timezone offset, so "09:00" is never silently read in the server's zone.
type Draft struct {
	ID   string `json:"id"`
	Body string `json:"body"`
	// Texts replace Body on a platform, by platform name, e.g.
	// {"x": "a shorter text"}: every target on that platform gets it.
	Texts map[string]string `json:"texts,omitempty"`
	Media []DraftMedia      `json:"media,omitempty"`
	// Thread are the texts of the replies that follow the post, in order
	// (see Post.Thread): at most MaxThreadParts-1, each checked as the
	// body is, for every target; every target's platform must have a
	// reply chain.
	Thread  []string      `json:"thread,omitempty"`
	Targets []DraftTarget `json:"targets"`
	// Queue: a target without a time (at) takes its account's next free
	// posting slot (Account.Slots).
	Queue bool `json:"queue,omitempty"`
	// TimesIn says how a target's time without an offset is read:
	// TimesInAccount reads it in the target account's time zone; "" (the
	// default) refuses it, so that no time is ever read in a zone the
	// operator did not name.
	TimesIn string `json:"times_in,omitempty"`
	// Author is who adds the post (post.Post.Author): set by the surface
	// from the authenticated caller, never read from a draft's JSON.
	Author string `json:"-"`
}

// TimesInAccount is Draft.TimesIn for "read a time without an offset in
// the target account's time zone".
const TimesInAccount = "account"

// DraftMedia is an attachment as an operator names it: a file Path the
// CLI imports (hashes, copies into the workspace, sniffs the content
// type), or an already imported Ref with its SHA256.
type DraftMedia struct {
	Media
	// Path is a file to import; relative paths are relative to the draft.
	Path string `json:"path,omitempty"`
}

// DraftTarget is one account and the time to publish there.
type DraftTarget struct {
	Account string `json:"account"`
	// At is an RFC 3339 time with an offset, e.g. "2026-12-01T09:00:00+01:00";
	// without an offset ("2026-12-01T09:00") only with Draft.TimesIn
	// "account"; empty with Draft.Queue, for the account's next free
	// posting slot.
	At string `json:"at,omitempty"`
}

// Limits are a platform's (or one instance's) content limits.
type Limits struct {
	MaxTextGraphemes int `json:"max_characters,omitempty"`
	// MaxTextWithMedia is the text limit of a post that carries media
	// (Telegram's photo caption); 0 means MaxTextGraphemes applies. It is
	// the platform's: the stores do not keep it with an account.
	MaxTextWithMedia int `json:"max_characters_with_media,omitempty"`
	// MaxTextBytes limits the text's UTF-8 bytes besides its characters
	// (Bluesky's 3,000); 0 means none. It is the platform's, like
	// MaxTextWithMedia.
	MaxTextBytes int `json:"max_text_bytes,omitempty"`
	MaxMedia     int `json:"max_media,omitempty"`
	// MaxMediaBytes is the largest image the instance accepts; 0 = unknown.
	MaxMediaBytes int64 `json:"max_media_bytes,omitempty"`
}

// Or fills every unknown (zero) field of l from def.
func (l Limits) Or(def Limits) Limits {
	if l.MaxTextGraphemes == 0 {
		l.MaxTextGraphemes = def.MaxTextGraphemes
	}
	if l.MaxTextWithMedia == 0 {
		l.MaxTextWithMedia = def.MaxTextWithMedia
	}
	if l.MaxTextBytes == 0 {
		l.MaxTextBytes = def.MaxTextBytes
	}
	if l.MaxMedia == 0 {
		l.MaxMedia = def.MaxMedia
	}
	if l.MaxMediaBytes == 0 {
		l.MaxMediaBytes = def.MaxMediaBytes
	}
	return l
}

// Rules is what validation checks a draft against.
type Rules struct {
	// Accounts are the known accounts.
	Accounts map[AccountID]Account
	// Limits returns a platform's limits; ok is false for an unknown platform.
	Limits func(platform string) (l Limits, ok bool)
	// Measure counts text as the platform counts it against its limit (X
	// weighs URLs and wide characters); nil counts graphemes.
	Measure func(platform, text string) int
	// Now is the current time; a planned time before it is refused.
	Now time.Time
	// Blocked is the workspace's blocklist: a body naming one is refused.
	Blocked []BlockedTerm
	// Replies reports whether a platform has a reply chain, which a post
	// with a thread needs on every target; nil: none has.
	Replies func(platform string) bool
}

var (
	idPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	shaPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	refPattern = regexp.MustCompile(`^([0-9a-f]{64})\.(png|jpg|gif|webp)$`)
)

// RefNames reports whether ref is the name the media stores give the bytes
// whose SHA-256 is sha: "<sha>.<ext>". The ref is what an adapter that
// reads attachments back by file name (Discord) fingerprints, and sha what
// the ledger does; they must name the same bytes.
func RefNames(ref, sha string) bool {
	m := refPattern.FindStringSubmatch(ref)
	return m != nil && m[1] == sha
}

// Validate checks a draft and returns the post it describes, every target
// scheduled. The error joins one *FieldError per problem found.
func (d Draft) Validate(r Rules) (Post, error) {
	var errs []error
	bad := func(field, problem, fix string) {
		errs = append(errs, &FieldError{Field: field, Problem: problem, Fix: fix})
	}
	if !idPattern.MatchString(d.ID) {
		bad("id", fmt.Sprintf("%q is not a valid post id", d.ID), "use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if off := InvalidUTF8(d.Body); off >= 0 {
		bad("body", fmt.Sprintf("byte %d is not valid UTF-8", off), "save the text as UTF-8")
	} else if strings.TrimSpace(d.Body) == "" && len(d.Media) == 0 {
		bad("body", "is empty", "write the text of the post")
	} else if m, found := FindBlocked(d.Body, r.Blocked); found {
		bad("body", m.Error(), fmt.Sprintf("rewrite the post, or take the term off the blocklist (oncepost blocklist remove %q)", m.Term.Term))
	}
	for i, m := range d.Media {
		f := fmt.Sprintf("media[%d]", i)
		if m.Ref == "" {
			bad(f+".path", "is empty", "name the file to attach")
			continue
		}
		if !shaPattern.MatchString(m.SHA256) {
			bad(f+".sha256", "is not a lowercase hex SHA-256", "use the 64-character hex SHA-256 of the file")
		} else if !RefNames(m.Ref, m.SHA256) {
			bad(f+".ref", fmt.Sprintf("%q is not %s with an image extension", m.Ref, m.SHA256), "give the ref post add stored (the file's SHA-256 and extension), or give path instead")
		}
		for _, name := range slices.Sorted(maps.Keys(m.Fitted)) {
			v, ff := m.Fitted[name], f+".fitted."+name
			switch {
			case v.Ref == "":
				bad(ff+".ref", "is empty", "name the fitted file, or leave the version out")
			case !shaPattern.MatchString(v.SHA256):
				bad(ff+".sha256", "is not a lowercase hex SHA-256", "use the 64-character hex SHA-256 of the fitted file")
			case !RefNames(v.Ref, v.SHA256):
				bad(ff+".ref", fmt.Sprintf("%q is not %s with an image extension", v.Ref, v.SHA256), "give the ref post add stored, or leave the version out")
			}
		}
	}
	d.validateThread(r, bad)
	if len(d.Targets) == 0 {
		bad("targets", "is empty", "add at least one {account, at}")
	}
	if d.TimesIn != "" && d.TimesIn != TimesInAccount {
		bad("times_in", fmt.Sprintf("%q is not a way to read times", d.TimesIn), `use "account" (times without an offset are read in each account's time zone), or leave it out`)
	}
	usedTexts := map[string]bool{}
	textNames := slices.Sorted(maps.Keys(d.Texts))
	for _, name := range textNames {
		text, f := d.Texts[name], "texts."+name
		if off := InvalidUTF8(text); off >= 0 {
			bad(f, fmt.Sprintf("byte %d is not valid UTF-8", off), "save the text as UTF-8")
		} else if strings.TrimSpace(text) == "" && len(d.Media) == 0 {
			bad(f, "is empty", "write the text for "+name+", or leave it out to send the body")
		} else if m, found := FindBlocked(text, r.Blocked); found {
			bad(f, m.Error(), fmt.Sprintf("rewrite it, or take the term off the blocklist (oncepost blocklist remove %q)", m.Term.Term))
		}
	}
	p := Post{ID: ID(d.ID), Body: d.Body, Author: d.Author}
	if len(d.Texts) > 0 {
		p.Texts = map[string]string{}
		for k, v := range d.Texts {
			p.Texts[k] = v
		}
	}
	for _, m := range d.Media {
		p.Media = append(p.Media, m.Media)
	}
	if len(d.Thread) > 0 {
		p.Thread = append([]string(nil), d.Thread...)
	}
	seen := map[AccountID]bool{}
	for i, t := range d.Targets {
		f := fmt.Sprintf("targets[%d]", i)
		acc, ok := r.Accounts[AccountID(t.Account)]
		switch {
		case t.Account == "":
			bad(f+".account", "is empty", "name one of the configured accounts")
		case !ok:
			bad(f+".account", fmt.Sprintf("unknown account %q", t.Account), "add the account first or fix the name")
		case seen[acc.ID]:
			bad(f+".account", fmt.Sprintf("account %q is targeted twice", t.Account), "schedule a second post instead")
		}
		seen[AccountID(t.Account)] = true
		var slot time.Time
		queued := d.Queue && t.At == ""
		if queued {
			if ok && len(acc.Slots) == 0 {
				bad(f+".at", fmt.Sprintf("is empty and account %q has no posting slots to queue the post in", t.Account),
					fmt.Sprintf("give a time, or give the account posting slots (oncepost account set %s --slot 'cron(0 9 ? * MON-FRI *)')", t.Account))
			}
		} else if s, err := ParseSlot(t.At); err != nil {
			fix := "write an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00+01:00"
			switch {
			case t.At == "":
				fix = "give a time, or add the post to the account's queue (queue: true)"
			case strings.Contains(err.Error(), "no timezone offset"):
				fix += `, or read times in each account's time zone (times_in: "account")`
			}
			bad(f+".at", err.Error(), fix)
		} else if slot = s; slot.Before(r.Now) {
			bad(f+".at", fmt.Sprintf("%s is in the past (now %s)", t.At, r.Now.UTC().Format(time.RFC3339)), "pick a time from now on")
		}
		if ok {
			lim, known := r.Limits(acc.Platform)
			lim = acc.Limits.Or(lim)
			switch {
			case !known:
				bad(f+".account", fmt.Sprintf("account %q is on unknown platform %q", t.Account, acc.Platform), "fix the account's platform")
			default:
				text, field := d.TextFor(acc.Platform)
				if field != "body" {
					usedTexts[acc.Platform] = true
				}
				c := r.count(lim, acc.Platform, text, len(d.Media) > 0)
				which := ""
				if c.WithMedia {
					which = " with media"
				}
				if c.Limit > 0 && c.Length > c.Limit {
					fix := fmt.Sprintf("shorten it by %d characters", c.Length-c.Limit)
					if field == "body" {
						fix += fmt.Sprintf(", or give %s a text of its own (texts.%s)", acc.Platform, acc.Platform)
					}
					bad(field, fmt.Sprintf("is %d characters as %s counts them, over its limit of %d%s for %s", c.Length, acc.Platform, c.Limit, which, t.Account), fix)
				}
				if c.MaxBytes > 0 && c.Bytes > c.MaxBytes {
					fix := fmt.Sprintf("shorten it by %d bytes", c.Bytes-c.MaxBytes)
					if field == "body" {
						fix += fmt.Sprintf(", or give %s a text of its own (texts.%s)", acc.Platform, acc.Platform)
					}
					bad(field, fmt.Sprintf("is %d bytes of UTF-8, over %s's limit of %d bytes for %s", c.Bytes, acc.Platform, c.MaxBytes, t.Account), fix)
				}
				d.checkThreadTarget(r, acc, lim, bad)
				if len(d.Media) > lim.MaxMedia {
					bad("media", fmt.Sprintf("has %d attachments, over %s's limit of %d for %s", len(d.Media), acc.Platform, lim.MaxMedia, t.Account),
						fmt.Sprintf("attach at most %d", lim.MaxMedia))
				}
			}
		}
		p.Targets = append(p.Targets, Target{Account: AccountID(t.Account), Slot: slot, Status: Scheduled, Queued: queued, UpdatedAt: r.Now.UTC()})
	}
	for _, name := range textNames {
		if !usedTexts[name] {
			bad("texts."+name, "no target account is on "+name, "remove it, or target an account on "+name)
		}
	}
	if len(errs) > 0 {
		return Post{}, fmt.Errorf("post %q refused: %w", d.ID, errors.Join(errs...))
	}
	p.CreatedAt = r.Now.UTC()
	return p, nil
}

// TextFor is the text a platform's targets get: its own (Texts) or the
// body, and the field that holds it ("texts.<platform>" or "body").
func (d Draft) TextFor(platform string) (text, field string) {
	if tx, ok := d.Texts[platform]; ok {
		return tx, "texts." + platform
	}
	return d.Body, "body"
}

// TextCount is a text measured as Validate measures it against one
// account's limits.
type TextCount struct {
	// Length is the text's length as the platform counts it (Measure),
	// Limit the most it may be (0: none); WithMedia says Limit is the
	// lower limit of a post with media.
	Length    int  `json:"length"`
	Limit     int  `json:"limit"`
	WithMedia bool `json:"limit_with_media,omitempty"`
	// Bytes is the text's UTF-8 length, MaxBytes the most it may be (0:
	// no byte limit).
	Bytes    int `json:"bytes"`
	MaxBytes int `json:"max_bytes,omitempty"`
}

// Over reports whether the text is over either limit: Validate refuses it.
func (c TextCount) Over() bool {
	return c.Limit > 0 && c.Length > c.Limit || c.MaxBytes > 0 && c.Bytes > c.MaxBytes
}

// Count measures text as Validate does for a target on acc (the account's
// limits, else its platform's); ok is false for an account on a platform
// Limits does not know. withMedia: the post carries attachments.
func (r Rules) Count(acc Account, text string, withMedia bool) (c TextCount, ok bool) {
	lim, known := r.Limits(acc.Platform)
	if !known {
		return TextCount{}, false
	}
	return r.count(acc.Limits.Or(lim), acc.Platform, text, withMedia), true
}

// count measures text against lim: the one measurer of Validate and Count.
func (r Rules) count(lim Limits, platform, text string, withMedia bool) TextCount {
	c := TextCount{Length: graphemes.Count(text), Limit: lim.MaxTextGraphemes, Bytes: len(text), MaxBytes: lim.MaxTextBytes}
	if r.Measure != nil {
		c.Length = r.Measure(platform, text)
	}
	if withMedia && lim.MaxTextWithMedia > 0 && (c.Limit == 0 || lim.MaxTextWithMedia < c.Limit) {
		c.Limit, c.WithMedia = lim.MaxTextWithMedia, true
	}
	return c
}

// Slot years: what a one-time schedule can express (EventBridge Scheduler's
// at() and cron() stop at 2199).
const (
	MinSlotYear = 1970
	MaxSlotYear = 2199
)

// InvalidUTF8 returns the byte offset of the first byte of s that is not
// valid UTF-8, or -1.
func InvalidUTF8(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// ParseSlot parses a planned time, which must be RFC 3339 with an explicit
// offset ("Z" or "+01:00") and a year from MinSlotYear to MaxSlotYear; the
// result is in UTC.
func ParseSlot(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("is empty")
	}
	t, err := time.Parse(time.RFC3339, s)
	if err == nil {
		if y := t.UTC().Year(); y < MinSlotYear || y > MaxSlotYear {
			return time.Time{}, fmt.Errorf("%q is in year %d, outside %d-%d", s, y, MinSlotYear, MaxSlotYear)
		}
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if _, e := time.Parse(layout, s); e == nil {
			return time.Time{}, fmt.Errorf("%q has no timezone offset", s)
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
}
