package post

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rules := Rules{
		Accounts: map[AccountID]Account{
			"news": {ID: "news", Platform: "mastodon"},
			"odd":  {ID: "odd", Platform: "fax"},
			// An instance with a lower limit than the platform's default.
			"small": {ID: "small", Platform: "mastodon", Limits: Limits{MaxTextGraphemes: 3}},
		},
		Limits: func(p string) (Limits, bool) {
			if p == "mastodon" {
				return Limits{MaxTextGraphemes: 10, MaxMedia: 2}, true
			}
			return Limits{}, false
		},
		Now: now,
	}
	sha := strings.Repeat("ab", 32)
	ok := Draft{ID: "p1", Body: "hello", Targets: []DraftTarget{{Account: "news", At: "2026-12-01T10:00:00+01:00"}}}
	tests := []struct {
		name   string
		draft  Draft
		fields []string // fields named by the error, in order
	}{
		{"valid", ok, nil},
		{"empty body", with(ok, func(d *Draft) { d.Body = "  \n" }), []string{"body"}},
		{"bad id", with(ok, func(d *Draft) { d.ID = "a/b" }), []string{"id"}},
		{"over limit", with(ok, func(d *Draft) { d.Body = "eleven char" }), []string{"body"}},
		// 10 family emoji are 10 graphemes but 70 code points: allowed.
		{"graphemes not bytes", with(ok, func(d *Draft) { d.Body = strings.Repeat("👨‍👩‍👧‍👦", 10) }), nil},
		{"combining marks", with(ok, func(d *Draft) { d.Body = strings.Repeat("e\u0301", 10) }), nil},
		{"too many media", with(ok, func(d *Draft) {
			d.Media = []DraftMedia{{Media: Media{Ref: sha + ".png", SHA256: sha}}, {Media: Media{Ref: sha + ".png", SHA256: sha}}, {Media: Media{Ref: sha + ".png", SHA256: sha}}}
		}), []string{"media"}},
		{"bad media sha", with(ok, func(d *Draft) { d.Media = []DraftMedia{{Media: Media{Ref: "a", SHA256: "xyz"}}} }), []string{"media[0].sha256"}},
		{"bad fitted version", with(ok, func(d *Draft) {
			d.Media = []DraftMedia{{Media: Media{Ref: sha + ".png", SHA256: sha, Fitted: map[string]Fitted{"bluesky": {SHA256: sha}, "x": {Ref: "x.jpg", SHA256: "XYZ"}}}}}
		}), []string{"media[0].fitted.bluesky.ref", "media[0].fitted.x.sha256"}},
		// A ref names the bytes by their hash: one that names other bytes
		// than sha256 says would be fingerprinted as one file and read
		// back (by its name) as another.
		{"ref of other bytes", with(ok, func(d *Draft) {
			d.Media = []DraftMedia{{Media: Media{Ref: strings.Repeat("cd", 32) + ".png", SHA256: sha}}}
		}), []string{"media[0].ref"}},
		{"ref not a content hash", with(ok, func(d *Draft) { d.Media = []DraftMedia{{Media: Media{Ref: "photos/cat.png", SHA256: sha}}} }), []string{"media[0].ref"}},
		{"fitted ref of other bytes", with(ok, func(d *Draft) {
			d.Media = []DraftMedia{{Media: Media{Ref: sha + ".png", SHA256: sha, Fitted: map[string]Fitted{"x": {Ref: sha + ".jpg", SHA256: strings.Repeat("cd", 32)}}}}}
		}), []string{"media[0].fitted.x.ref"}},
		{"account's own limit is lower", with(ok, func(d *Draft) { d.Targets[0].Account = "small" }), []string{"body"}},
		{"unknown account", with(ok, func(d *Draft) { d.Targets[0].Account = "ghost" }), []string{"targets[0].account"}},
		{"unknown platform", with(ok, func(d *Draft) { d.Targets[0].Account = "odd" }), []string{"targets[0].account"}},
		{"no offset", with(ok, func(d *Draft) { d.Targets[0].At = "2026-12-01T10:00:00" }), []string{"targets[0].at"}},
		{"not a time", with(ok, func(d *Draft) { d.Targets[0].At = "tomorrow" }), []string{"targets[0].at"}},
		{"in the past", with(ok, func(d *Draft) { d.Targets[0].At = "2026-12-01T08:59:00+01:00" }), []string{"targets[0].at"}},
		{"no targets", with(ok, func(d *Draft) { d.Targets = nil }), []string{"targets"}},
		{"same account twice", with(ok, func(d *Draft) { d.Targets = append(d.Targets, d.Targets[0]) }), []string{"targets[1].account"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.draft.Validate(rules)
			var got []string
			for _, fe := range fieldErrors(err) {
				got = append(got, fe.Field)
				if fe.Problem == "" || !strings.Contains(err.Error(), fe.Field+": ") {
					t.Errorf("error %q does not name field %s with a problem", err, fe.Field)
				}
			}
			if diff := cmp.Diff(tt.fields, got); diff != "" {
				t.Errorf("fields named (-want +got):\n%s\nerror: %v", diff, err)
			}
			if err == nil {
				want := Target{Account: "news", Slot: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Status: Scheduled, UpdatedAt: now}
				if diff := cmp.Diff([]Target{want}, p.Targets); diff != "" {
					t.Errorf("targets (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func fieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		if fe, ok := e.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

func with(d Draft, f func(*Draft)) Draft {
	d.Targets = append([]DraftTarget(nil), d.Targets...)
	f(&d)
	return d
}

func TestTargetMoveOnlyAtTheSlotRead(t *testing.T) {
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tg := Target{Account: "a", Status: Scheduled, Slot: slot}
	if _, err := tg.Apply(TargetUpdate{Status: Triggered, Slot: slot.Add(-time.Hour), At: slot}); !errors.Is(err, ErrConflict) {
		t.Errorf("move of a target read at another slot: %v, want ErrConflict", err)
	}
	if got, err := tg.Apply(TargetUpdate{Status: Triggered, Slot: slot, At: slot}); err != nil || got.Status != Triggered {
		t.Errorf("move at the slot read: %v, %s", err, got.Status)
	}
}

func TestTargetMoves(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		from, to TargetStatus
		ok       bool
	}{
		{Scheduled, Triggered, true},
		{Triggered, Published, true},
		{Triggered, Publishing, true},
		{Publishing, Published, true},
		{Publishing, Waiting, true},
		{Triggered, Cancelled, true},
		{Held, Published, true},
		{Published, Published, false},
		{Published, Failed, false},
		{Cancelled, Published, false},
		{Cancelled, Triggered, false},
		{Publishing, Cancelled, false},
		{Failed, Published, false},
		{Published, Deleted, true},
		{Deleted, Published, false},
		{Scheduled, Deleted, false},
	}
	for _, tt := range tests {
		got, err := Target{Account: "a", Status: tt.from}.Apply(TargetUpdate{Status: tt.to, RemoteID: "r", At: at})
		if (err == nil) != tt.ok {
			t.Errorf("%s → %s: err %v, want ok=%v", tt.from, tt.to, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrConflict) || got.Status != tt.from {
				t.Errorf("%s → %s refused with %v and status %s", tt.from, tt.to, err, got.Status)
			}
		} else if got.Status != tt.to || got.RemoteID != "r" {
			t.Errorf("%s → %s gave %+v", tt.from, tt.to, got)
		}
	}
}

// A text per platform: the target on that platform is checked against its
// own text (the error names the platform and the field), the others
// against the body; a text for a platform no target is on is refused.
func TestDraftTextsPerPlatform(t *testing.T) {
	r := Rules{
		Accounts: map[AccountID]Account{"news": {ID: "news", Platform: "mastodon"}, "bird": {ID: "bird", Platform: "x"}},
		Limits: func(p string) (Limits, bool) {
			return map[string]Limits{"mastodon": {MaxTextGraphemes: 500, MaxMedia: 4}, "x": {MaxTextGraphemes: 10, MaxMedia: 4}}[p], true
		},
		Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	}
	at := "2026-12-01T09:00:00Z"
	targets := []DraftTarget{{Account: "news", At: at}, {Account: "bird", At: at}}
	long := "A body that is longer than ten characters."

	if _, err := (Draft{ID: "p1", Body: long, Targets: targets}).Validate(r); err == nil ||
		!strings.Contains(err.Error(), "body: is 42 characters as x counts them, over its limit of 10 for bird") || !strings.Contains(err.Error(), "texts.x") {
		t.Errorf("no text for x: %v", err)
	}
	p, err := (Draft{ID: "p2", Body: long, Texts: map[string]string{"x": "Short."}, Targets: targets}).Validate(r)
	if err != nil {
		t.Fatalf("with a text for x: %v", err)
	}
	if p.TextFor("x") != "Short." || p.TextFor("mastodon") != long {
		t.Errorf("TextFor: x %q, mastodon %q", p.TextFor("x"), p.TextFor("mastodon"))
	}
	if _, err := (Draft{ID: "p3", Body: long, Texts: map[string]string{"x": "Still far too long for x."}, Targets: targets}).Validate(r); err == nil ||
		!strings.Contains(err.Error(), "texts.x: is 25 characters as x counts them") {
		t.Errorf("a text for x over x's limit: %v", err)
	}
	if _, err := (Draft{ID: "p4", Body: "ok", Texts: map[string]string{"bluesky": "hi"}, Targets: targets[:1]}).Validate(r); err == nil ||
		!strings.Contains(err.Error(), "texts.bluesky: no target account is on bluesky") {
		t.Errorf("a text for a platform without targets: %v", err)
	}
}

// A platform whose text limit shrinks when the post carries media
// (Telegram's 1,024-unit caption) refuses at validation, naming the
// platform, the field and the limit with media.
func TestDraftTextLimitWithMedia(t *testing.T) {
	r := Rules{
		Accounts: map[AccountID]Account{"chan": {ID: "chan", Platform: "telegram"}, "news": {ID: "news", Platform: "mastodon"}},
		Limits: func(p string) (Limits, bool) {
			return map[string]Limits{
				"telegram": {MaxTextGraphemes: 40, MaxTextWithMedia: 10, MaxMedia: 1},
				"mastodon": {MaxTextGraphemes: 500, MaxMedia: 4},
			}[p], true
		},
		Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	}
	at := "2026-12-01T09:00:00Z"
	photo := []DraftMedia{{Media: Media{Ref: strings.Repeat("a", 64) + ".jpg", SHA256: strings.Repeat("a", 64), ContentType: "image/jpeg"}}}
	text := "Twenty characters!!!"
	tests := []struct {
		name    string
		draft   Draft
		wantErr string
	}{
		{"text only, under the text limit", Draft{ID: "p1", Body: text, Targets: []DraftTarget{{Account: "chan", At: at}}}, ""},
		{"with a photo, over the caption limit", Draft{ID: "p2", Body: text, Media: photo, Targets: []DraftTarget{{Account: "chan", At: at}}},
			"body: is 20 characters as telegram counts them, over its limit of 10 with media for chan"},
		{"a text of its own for telegram", Draft{ID: "p3", Body: text, Texts: map[string]string{"telegram": "Short."}, Media: photo, Targets: []DraftTarget{{Account: "chan", At: at}, {Account: "news", At: at}}}, ""},
		{"another platform has no caption limit", Draft{ID: "p4", Body: text, Media: photo, Targets: []DraftTarget{{Account: "news", At: at}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.draft.Validate(r)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// A platform that limits the text's UTF-8 bytes besides its characters
// (Bluesky: 300 characters and 3,000 bytes) refuses a text over the bytes
// at validation, naming the field, the platform and the limit. The limit
// is the platform's: an account's stored limits (which do not carry it)
// take it from the platform's.
func TestDraftTextBytes(t *testing.T) {
	r := Rules{
		Accounts: map[AccountID]Account{
			"sky":  {ID: "sky", Platform: "bluesky", Limits: Limits{MaxTextGraphemes: 300, MaxMedia: 4}},
			"news": {ID: "news", Platform: "mastodon"},
		},
		Limits: func(p string) (Limits, bool) {
			return map[string]Limits{
				"bluesky":  {MaxTextGraphemes: 300, MaxTextBytes: 3000, MaxMedia: 4},
				"mastodon": {MaxTextGraphemes: 500, MaxMedia: 4},
			}[p], true
		},
		Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	}
	at := "2026-12-01T09:00:00Z"
	family := "👨‍👩‍👧‍👦"                 // one character, 25 bytes
	over := strings.Repeat(family, 121) // 121 characters, 3025 bytes
	tests := []struct {
		name    string
		draft   Draft
		wantErr string
	}{
		{"3000 bytes", Draft{ID: "p1", Body: strings.Repeat(family, 120), Targets: []DraftTarget{{Account: "sky", At: at}}}, ""},
		{"3025 bytes", Draft{ID: "p2", Body: over, Targets: []DraftTarget{{Account: "sky", At: at}}},
			"body: is 3025 bytes of UTF-8, over bluesky's limit of 3000 bytes for sky; shorten it by 25 bytes, or give bluesky a text of its own (texts.bluesky)"},
		{"3025 bytes in bluesky's own text", Draft{ID: "p3", Body: "hi", Texts: map[string]string{"bluesky": over}, Targets: []DraftTarget{{Account: "sky", At: at}}},
			"texts.bluesky: is 3025 bytes of UTF-8, over bluesky's limit of 3000 bytes for sky; shorten it by 25 bytes"},
		{"another platform counts no bytes", Draft{ID: "p4", Body: over, Targets: []DraftTarget{{Account: "news", At: at}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.draft.Validate(r)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
