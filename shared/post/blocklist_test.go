package post_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
)

func terms(t *testing.T, words ...string) []post.BlockedTerm {
	t.Helper()
	var out []post.BlockedTerm
	for _, w := range words {
		bt, err := post.NewBlockedTerm(w, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("NewBlockedTerm(%q) = %v", w, err)
		}
		out = append(out, bt)
	}
	return out
}

func TestFindBlocked(t *testing.T) {
	type where struct {
		Term         string
		Line, Column int
		Found        string
	}
	tests := []struct {
		name  string
		text  string
		terms []string
		want  *where
	}{
		{"plain", "This is bad news", []string{"bad"}, &where{"bad", 1, 9, "bad"}},
		{"case", "This is BAD news", []string{"bad"}, &where{"bad", 1, 9, "BAD"}},
		{"full width", "This is ＢＡＤ news", []string{"bad"}, &where{"bad", 1, 9, "ＢＡＤ"}},
		{"term written in capitals", "so bad", []string{"BAD"}, &where{"BAD", 1, 4, "bad"}},
		{"composed and decomposed accents", "un cafe\u0301 noir", []string{"café"}, &where{"café", 1, 4, "cafe\u0301"}},
		{"ligature", "a ﬁne day", []string{"fine"}, &where{"fine", 1, 3, "ﬁne"}},
		{"punctuation is an edge", "really, spam!", []string{"spam"}, &where{"spam", 1, 9, "spam"}},
		{"second line, column in characters", "héllo\nnaïve spam", []string{"spam"}, &where{"spam", 2, 7, "spam"}},
		{"phrase", "please Buy Now today", []string{"buy now"}, &where{"buy now", 1, 8, "Buy Now"}},
		{"leftmost of several", "spam then bad", []string{"bad", "spam"}, &where{"spam", 1, 1, "spam"}},
		{"later whole word after a partial", "badge bad", []string{"bad"}, &where{"bad", 1, 7, "bad"}},
		{"not inside a word", "a badge and a scrapbook", []string{"bad", "crap"}, nil},
		{"no accent is not the accented word", "cafe", []string{"café"}, nil},
		{"han inside a sentence", "今日は悪い日", []string{"悪い"}, &where{"悪い", 1, 4, "悪い"}},
		{"empty list", "bad", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, found := post.FindBlocked(tt.text, terms(t, tt.terms...))
			var got *where
			if found {
				got = &where{m.Term.Term, m.Line, m.Column, m.Found}
				if tt.text[m.Offset:m.Offset+len(m.Found)] != m.Found {
					t.Errorf("Offset %d does not point at %q", m.Offset, m.Found)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FindBlocked(%q, %q) (-want +got):\n%s", tt.text, tt.terms, diff)
			}
		})
	}
}

func TestNewBlockedTerm(t *testing.T) {
	a, err := post.NewBlockedTerm("  ＢＡＤ   Word ", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := post.NewBlockedTerm("bad word", time.Unix(0, 0))
	if a.Key != b.Key || a.Key != "bad word" {
		t.Errorf("keys %q and %q, want both %q", a.Key, b.Key, "bad word")
	}
	if a.Term != "ＢＡＤ Word" {
		t.Errorf("Term = %q, want the operator's spelling with spaces collapsed", a.Term)
	}
	for _, bad := range []string{"", "   ", "\xff", string(make([]rune, 101))} {
		if _, err := post.NewBlockedTerm(bad, time.Now()); err == nil {
			t.Errorf("NewBlockedTerm(%q) = nil error, want a refusal", bad)
		}
	}
}

func TestValidateRefusesABlockedTerm(t *testing.T) {
	r := post.Rules{
		Accounts: map[post.AccountID]post.Account{"a": {ID: "a", Platform: "mastodon"}},
		Limits:   func(string) (post.Limits, bool) { return post.Limits{MaxTextGraphemes: 500, MaxMedia: 4}, true },
		Now:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Blocked:  terms(t, "spoiler"),
	}
	d := post.Draft{ID: "p", Body: "No SPOILER here", Targets: []post.DraftTarget{{Account: "a", At: "2026-02-01T00:00:00Z"}}}
	_, err := d.Validate(r)
	const want = `body: contains the blocked term "spoiler" at line 1, column 4 ("SPOILER")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Validate = %v, want an error containing %s", err, want)
	}
	r.Blocked = nil
	if _, err := d.Validate(r); err != nil {
		t.Fatalf("Validate without the term = %v", err)
	}
}
