package post

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidateThread(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rules := Rules{
		Accounts: map[AccountID]Account{
			"news": {ID: "news", Platform: "mastodon"},
			"sky":  {ID: "sky", Platform: "bluesky"},
			"chat": {ID: "chat", Platform: "discord"},
		},
		Limits: func(p string) (Limits, bool) {
			switch p {
			case "mastodon":
				return Limits{MaxTextGraphemes: 10, MaxMedia: 2}, true
			case "bluesky":
				return Limits{MaxTextGraphemes: 20, MaxTextBytes: 12, MaxMedia: 2}, true
			case "discord":
				return Limits{MaxTextGraphemes: 100, MaxMedia: 2}, true
			}
			return Limits{}, false
		},
		Replies: func(p string) bool { return p == "mastodon" || p == "bluesky" },
		Now:     now,
		Blocked: []BlockedTerm{{Term: "forbidden"}},
	}
	at := "2026-12-01T10:00:00+01:00"
	ok := Draft{ID: "p1", Body: "hello", Thread: []string{"2/ more", "3/ end"}, Targets: []DraftTarget{{Account: "news", At: at}}}
	tests := []struct {
		name   string
		draft  Draft
		fields []string
	}{
		{"valid", ok, nil},
		{"on two platforms with replies", with(ok, func(d *Draft) { d.Targets = append(d.Targets, DraftTarget{Account: "sky", At: at}) }), nil},
		{"empty part", with(ok, func(d *Draft) { d.Thread = []string{"2/ more", " \n"} }), []string{"thread[1]"}},
		{"invalid UTF-8", with(ok, func(d *Draft) { d.Thread = []string{"a\xffb"} }), []string{"thread[0]"}},
		{"blocked term", with(ok, func(d *Draft) { d.Thread = []string{"forbidden"} }), []string{"thread[0]"}},
		{"over the platform's limit", with(ok, func(d *Draft) { d.Thread = []string{"2/ more", "eleven char"} }), []string{"thread[1]"}},
		// Bluesky's byte limit, on the bluesky target only.
		{"over a byte limit", with(ok, func(d *Draft) {
			d.Thread = []string{"ééééééé"}
			d.Targets = []DraftTarget{{Account: "sky", At: at}}
		}), []string{"thread[0]"}},
		{"platform without replies", with(ok, func(d *Draft) { d.Targets = append(d.Targets, DraftTarget{Account: "chat", At: at}) }), []string{"thread"}},
		{"too many parts", with(ok, func(d *Draft) { d.Thread = strings.Split(strings.Repeat("x,", MaxThreadParts), ",")[:MaxThreadParts] }), []string{"thread"}},
		{"the most parts", with(ok, func(d *Draft) {
			d.Thread = strings.Split(strings.Repeat("x,", MaxThreadParts-1), ",")[:MaxThreadParts-1]
		}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.draft.Validate(rules)
			var got []string
			for _, fe := range fieldErrors(err) {
				got = append(got, fe.Field)
			}
			if d := cmp.Diff(tt.fields, got); d != "" {
				t.Errorf("fields named (-want +got):\n%s\nerror: %v", d, err)
			}
			if err == nil && !cmp.Equal(p.Thread, tt.draft.Thread) {
				t.Errorf("post thread %q, want the draft's %q", p.Thread, tt.draft.Thread)
			}
		})
	}
	// Without Replies no platform takes a thread.
	r := rules
	r.Replies = nil
	if _, err := ok.Validate(r); len(fieldErrors(err)) != 1 || fieldErrors(err)[0].Field != "thread" {
		t.Errorf("without Replies: %v, want a refusal of thread", err)
	}
	if err := fieldErrors(func() error {
		_, err := with(ok, func(d *Draft) { d.Targets[0].Account = "chat" }).Validate(rules)
		return err
	}()); len(err) != 1 ||
		!strings.Contains(err[0].Problem, `"chat" is on discord`) {
		t.Errorf("the refusal does not name the account and platform: %v", err)
	}
}

func TestPart(t *testing.T) {
	p := Post{ID: "p1", Body: "one", Texts: map[string]string{"x": "short one"}, Thread: []string{"two", "three"},
		Media: []Media{{Ref: "a.png"}}, Targets: []Target{{Account: "a"}}}
	if p.Parts() != 3 {
		t.Errorf("Parts() = %d, want 3", p.Parts())
	}
	if got := p.Part(1); got.TextFor("x") != "short one" || len(got.Media) != 1 {
		t.Errorf("part 1 is not the post: %+v", got)
	}
	for k, want := range map[int]string{2: "two", 3: "three"} {
		got := p.Part(k)
		if got.TextFor("x") != want || got.TextFor("mastodon") != want || got.Media != nil || got.ID != "p1" || len(got.Targets) != 1 || got.Thread != nil {
			t.Errorf("part %d = %+v, want body %q on every platform, no media, the post's id and targets", k, got, want)
		}
	}
}
