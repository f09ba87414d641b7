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
	// passes) the attachments against each target's media limits.
	p, err := dr.Validate(rules)
	if err == nil {
		err = d.checkMedia(ctx, p, rules.Accounts, sizes)
	}
	if err != nil {
		out.Errors = FieldErrors(err)
		if len(out.Errors) == 0 {
			return DraftCheck{}, fmt.Errorf("check draft: %w", err)
		}
	}
	out.OK = len(out.Errors) == 0

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
	for i, m := range dr.Media {
		if m.Ref == "" {
			continue
		}
		mc := MediaCheck{Index: i, Ref: m.Ref, AltLength: utf8.RuneCountInString(m.Alt), Versions: []MediaVersion{}}
		for _, name := range platforms {
			v, err := d.mediaVersion(ctx, m.Media, name, limits[name], sizes)
			if err != nil {
				return DraftCheck{}, fmt.Errorf("check draft: media[%d] for %s: %w", i, name, err)
			}
			mc.Versions = append(mc.Versions, v)
		}
		out.Media = append(out.Media, mc)
	}
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
// version or itself, measured (sizes, MediaSize) and, with ReadMedia,
// its dimensions read from its header (mediafit.Fit of an image that
// already fits reads only the header: nothing is decoded or re-encoded
// here, so a check stays cheap), compared with the platform's limits.
func (d *Desk) mediaVersion(ctx context.Context, m post.Media, name string, lim ImageLimits, sizes map[string]int) (MediaVersion, error) {
	sent := m.For(name)
	caps, _ := d.capabilities(name)
	v := MediaVersion{Platform: name, Ref: sent.Ref, ContentType: sent.ContentType, Fitted: sent.Ref != m.Ref,
		MaxBytes: lim.MaxBytes, MaxPixels: lim.MaxPixels, AltMissing: m.Alt == "", MaxAlt: caps.MaxAltText}
	v.AltOver = v.MaxAlt > 0 && utf8.RuneCountInString(m.Alt) > v.MaxAlt
	if n, ok := sizes[sent.Ref]; ok {
		v.Bytes = int64(n)
	} else if d.MediaSize != nil {
		n, err := d.MediaSize(ctx, sent.Ref)
		switch {
		case errors.Is(err, post.ErrNotFound):
			v.Problem = "no attachment is stored as " + sent.Ref
			return v, nil
		case err != nil:
			return MediaVersion{}, err
		}
		v.Bytes = n
	}
	if d.ReadMedia != nil {
		data, err := d.ReadMedia(ctx, sent.Ref)
		switch {
		case errors.Is(err, post.ErrNotFound), errors.Is(err, ErrMediaInvalid):
			v.Problem = "no attachment is stored as " + sent.Ref
			return v, nil
		case err != nil:
			return MediaVersion{}, err
		}
		r, err := mediafit.Fit(data, sent.ContentType, mediafit.Limits{Formats: []string{sent.ContentType}})
		if err != nil {
			v.Problem = err.Error()
			return v, nil
		}
		v.Bytes, v.Width, v.Height = int64(len(data)), r.Width, r.Height
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
