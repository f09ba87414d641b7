package publishing

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"oncepost/shared/mediafit"
	"oncepost/shared/post"
)

// DraftCheck is what validation says of a draft, written nowhere: what
// each target gets and how long it is against its limit, what each
// platform gets of each attachment, the blocklist's hits, and the field
// errors Validate would return. A composer shows it as the text is
// typed: one measurer, the one Validate uses.
type DraftCheck struct {
	// OK: Validate would accept the draft now (no Errors).
	OK      bool          `json:"ok"`
	Targets []TargetCheck `json:"targets"`
	Media   []MediaCheck  `json:"media"`
	Blocked []BlockedHit  `json:"blocked"`
	// Errors are the field errors Validate would return, in its order
	// (a surface writes them in its own shape).
	Errors []*post.FieldError `json:"-"`
}

// TargetCheck is one target of a draft: its account, the text it gets
// (the platform's own, else the body: Field says which) and that text's
// count against the account's limits (post.Rules.Count, as Validate).
type TargetCheck struct {
	Account  post.AccountID `json:"account"`
	Platform string         `json:"platform"`
	Field    string         `json:"field"`
	Text     string         `json:"text"`
	post.TextCount
	// Over: Validate refuses the text for this target.
	Over bool `json:"over"`
}

// MediaCheck is one attachment of a draft and the version each platform
// of its targets gets.
type MediaCheck struct {
	// Index is the attachment's place in the draft's media.
	Index     int            `json:"index"`
	Ref       string         `json:"ref"`
	AltLength int            `json:"alt_length"`
	Versions  []MediaVersion `json:"versions"`
}

// MediaVersion is what one platform gets of an attachment.
type MediaVersion struct {
	Platform string `json:"platform"`
	// Ref and ContentType are the version sent there: the one fitted
	// for the platform (Fitted), else the attachment itself.
	Ref         string `json:"ref"`
	ContentType string `json:"content_type"`
	Fitted      bool   `json:"fitted"`
	// Bytes, Width and Height are the version's size (0: not known, the
	// file is not stored or not readable here).
	Bytes  int64 `json:"bytes,omitempty"`
	Width  int   `json:"width,omitempty"`
	Height int   `json:"height,omitempty"`
	// MaxBytes and MaxPixels are the platform's image limits for this
	// post (ImageLimits; 0: none known).
	MaxBytes  int64 `json:"max_bytes,omitempty"`
	MaxPixels int64 `json:"max_pixels,omitempty"`
	// AltMissing: the image has no alt text (no platform requires it;
	// people who cannot see the image get nothing). MaxAlt is the
	// platform's alt text limit (0: none known); AltOver: over it, which
	// Validate refuses.
	AltMissing bool `json:"alt_missing"`
	MaxAlt     int  `json:"max_alt,omitempty"`
	AltOver    bool `json:"alt_over"`
	// Problem says why the version does not fit the platform's limits as
	// it is, if it does not ("" when it fits or is not measured).
	Problem string `json:"problem,omitempty"`
}

// BlockedHit is a blocklisted term found in a text of the draft.
type BlockedHit struct {
	// Field is "body" or "texts.<platform>".
	Field string `json:"field"`
	Term  string `json:"term"`
	// Found is the text as written; Line and Column (1-based) where.
	Found  string `json:"found"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// Check says what Validate would say of the draft (sizes as Validate's),
// and writes nothing: the targets' texts measured against their limits,
// each attachment's version per platform (with ReadMedia, its dimensions),
// the blocklist's hits and the field errors. An error is one reading the
// workspace, never a refusal: refusals are DraftCheck.Errors.
func (d *Desk) Check(ctx context.Context, dr post.Draft, sizes map[string]int) (DraftCheck, error) {
	if dr.ID == "" {
		dr.ID = d.newID(d.now())
	}
	rules, err := d.rules(ctx)
	if err != nil {
		return DraftCheck{}, err
	}
	out := DraftCheck{Targets: []TargetCheck{}, Media: []MediaCheck{}, Blocked: []BlockedHit{}}
	// What Validate does, on the same rules: the content, then (if it
	// passes, below) the attachments against each target's media limits.
	p, verr := dr.Validate(rules)

	accounts := map[post.AccountID]post.Account{}
	var platforms []string
	for _, t := range dr.Targets {
		acc, ok := rules.Accounts[post.AccountID(t.Account)]
		if !ok {
			continue
		}
		text, field := dr.TextFor(acc.Platform)
		c, ok := rules.Count(acc, text, len(dr.Media) > 0)
		if !ok {
			continue
		}
		accounts[acc.ID] = acc
		if !slices.Contains(platforms, acc.Platform) {
			platforms = append(platforms, acc.Platform)
		}
		out.Targets = append(out.Targets, TargetCheck{Account: acc.ID, Platform: acc.Platform, Field: field, Text: text, TextCount: c, Over: c.Over()})
	}

	out.Blocked = blockedHits(dr, rules.Blocked)

	limits := d.imageLimits(post.Post{Targets: targetsOf(accounts)}, accounts)
	// Each file is read once a check, whichever platforms get it and
	// whether the versions or Validate's media limits ask (on AWS a read
	// is an S3 GetObject, and a composer checks as it is typed): the
	// versions read first and note each file's size in stored, where
	// checkMedia finds it.
	measured := map[measureKey]measurement{}
	stored := map[string]int64{}
	for i, m := range dr.Media {
		if !post.RefNames(m.Ref, m.SHA256) {
			// Validate refused the ref (Errors say so): nothing is read
			// under a name the media stores never give ("", ".", a path).
			continue
		}
		mc := MediaCheck{Index: i, Ref: m.Ref, AltLength: utf8.RuneCountInString(m.Alt), Versions: []MediaVersion{}}
		for _, name := range platforms {
			v, err := d.mediaVersion(ctx, m.Media, name, limits[name], sizes, measured, stored)
			if err != nil {
				return DraftCheck{}, fmt.Errorf("check draft: media[%d] for %s: %w", i, name, err)
			}
			mc.Versions = append(mc.Versions, v)
		}
		out.Media = append(out.Media, mc)
	}

	if verr == nil {
		verr = d.checkMedia(ctx, p, rules.Accounts, sizes, stored)
	}
	if verr != nil {
		out.Errors = FieldErrors(verr)
		if len(out.Errors) == 0 {
			return DraftCheck{}, fmt.Errorf("check draft: %w", verr)
		}
	}
	out.OK = len(out.Errors) == 0
	return out, nil
}

// targetsOf are targets on the accounts, in a stable order.
func targetsOf(accounts map[post.AccountID]post.Account) []post.Target {
	var out []post.Target
	for _, id := range slices.Sorted(maps.Keys(accounts)) {
		out = append(out, post.Target{Account: id})
	}
	return out
}

// blockedHits are the blocklist's first hit in the body and in each
// platform's text, as Validate finds them.
func blockedHits(dr post.Draft, terms []post.BlockedTerm) []BlockedHit {
	out := []BlockedHit{}
	add := func(field, text string) {
		if m, found := post.FindBlocked(text, terms); found {
			out = append(out, BlockedHit{Field: field, Term: m.Term.Term, Found: m.Found, Line: m.Line, Column: m.Column})
		}
	}
	add("body", dr.Body)
	for _, name := range slices.Sorted(maps.Keys(dr.Texts)) {
		add("texts."+name, dr.Texts[name])
	}
	return out
}

// mediaVersion is what the platform gets of the attachment: its fitted
// version or itself, measured (measure) and compared with the platform's
// limits. A fitted version whose ref Validate refuses is not read.
func (d *Desk) mediaVersion(ctx context.Context, m post.Media, name string, lim ImageLimits, sizes map[string]int, measured map[measureKey]measurement, stored map[string]int64) (MediaVersion, error) {
	sent := m.For(name)
	caps, _ := d.capabilities(name)
	v := MediaVersion{Platform: name, Ref: sent.Ref, ContentType: sent.ContentType, Fitted: sent.Ref != m.Ref,
		MaxBytes: lim.MaxBytes, MaxPixels: lim.MaxPixels, AltMissing: m.Alt == "", MaxAlt: caps.MaxAltText}
	v.AltOver = v.MaxAlt > 0 && utf8.RuneCountInString(m.Alt) > v.MaxAlt
	if !post.RefNames(sent.Ref, sent.SHA256) {
		v.Problem = fmt.Sprintf("%q is not the name of a stored version (<sha256>.<ext>)", sent.Ref)
		return v, nil
	}
	key := measureKey{ref: sent.Ref, contentType: sent.ContentType}
	got, ok := measured[key]
	if !ok {
		var err error
		if got, err = d.measure(ctx, sent, sizes, stored); err != nil {
			return MediaVersion{}, err
		}
		measured[key] = got
	}
	v.Bytes, v.Width, v.Height, v.Problem = got.bytes, got.width, got.height, got.problem
	if v.Problem != "" {
		return v, nil
	}
	switch {
	case v.MaxBytes > 0 && v.Bytes > v.MaxBytes:
		v.Problem = fmt.Sprintf("%d bytes, over the %d %s takes (%s)", v.Bytes, v.MaxBytes, name, lim.Who)
	case v.MaxPixels > 0 && int64(v.Width)*int64(v.Height) > v.MaxPixels:
		v.Problem = fmt.Sprintf("%dx%d pixels, over the %d %s takes (%s)", v.Width, v.Height, v.MaxPixels, name, lim.Who)
	case len(lim.Formats) > 0 && !slices.Contains(lim.Formats, v.ContentType):
		v.Problem = fmt.Sprintf("%s, which %s does not take (%v)", v.ContentType, name, lim.Formats)
	}
	return v, nil
}

// measureKey is a file as Check measures it: its ref, read as the type.
type measureKey struct{ ref, contentType string }

// measurement is what Check learned of a file: its bytes (0: not known)
// and, read with ReadMedia, its dimensions; or why it cannot be
// measured (problem).
type measurement struct {
	bytes         int64
	width, height int
	problem       string
}

// measure measures a file: its size from sizes (a file not stored yet),
// else, with ReadMedia, its bytes and its dimensions read from its header
// (mediafit.Fit of an image that already fits reads only the header:
// nothing is decoded or re-encoded here, so a check stays cheap), else its
// size by MediaSize. What a store said of the file's size is noted in
// stored (-1: none stored), as checkMedia notes it. A missing file or one
// that cannot be read as named (post.ErrNotFound, ErrMediaInvalid:
// refusals, not failures) is the measurement's problem; any other error
// (a store that does not answer now) is returned.
func (d *Desk) measure(ctx context.Context, sent post.Media, sizes map[string]int, stored map[string]int64) (measurement, error) {
	var out measurement
	n, sized := sizes[sent.Ref]
	if sized {
		out.bytes = int64(n)
	}
	if d.ReadMedia == nil {
		if sized || d.MediaSize == nil {
			return out, nil
		}
		n, known := stored[sent.Ref]
		if !known {
			var err error
			n, err = d.MediaSize(ctx, sent.Ref)
			if problem, ok := unreadable(sent.Ref, err); ok {
				stored[sent.Ref] = -1
				out.problem = problem
				return out, nil
			}
			if err != nil {
				return measurement{}, fmt.Errorf("size of %s: %w", sent.Ref, err)
			}
			stored[sent.Ref] = n
		}
		if n < 0 {
			out.problem = "no attachment is stored as " + sent.Ref
			return out, nil
		}
		out.bytes = n
		return out, nil
	}
	data, err := d.ReadMedia(ctx, sent.Ref)
	if problem, ok := unreadable(sent.Ref, err); ok {
		stored[sent.Ref] = -1
		out.problem = problem
		return out, nil
	}
	if err != nil {
		return measurement{}, fmt.Errorf("read %s: %w", sent.Ref, err)
	}
	stored[sent.Ref] = int64(len(data))
	r, err := mediafit.Fit(data, sent.ContentType, mediafit.Limits{Formats: []string{sent.ContentType}})
	if err != nil {
		out.problem = err.Error()
		return out, nil
	}
	out.bytes, out.width, out.height = int64(len(data)), r.Width, r.Height
	return out, nil
}

// unreadable is the problem a media store's refusal to give a file is
// (ok true): none stored under the ref, or not readable as named.
func unreadable(ref string, err error) (problem string, ok bool) {
	switch {
	case errors.Is(err, post.ErrNotFound):
		return "no attachment is stored as " + ref, true
	case errors.Is(err, ErrMediaInvalid):
		return "the attachment stored as " + ref + " cannot be read as named", true
	}
	return "", false
}
