package catalog

import (
	"context"
	"strings"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Every platform name routes to its own adapter (the client says which
// platform it is), and an unknown one is refused by name.
func TestConnectorRoutesEveryPlatform(t *testing.T) {
	kinds := Kinds()
	if len(kinds) != len(Names()) {
		t.Fatalf("%d kinds, %d names", len(kinds), len(Names()))
	}
	for _, k := range kinds {
		adapter := map[string]string{Sandbox: Mastodon, DiscordWebhook: Discord}[k.Name]
		if adapter == "" {
			adapter = k.Name
		}
		if got := strings.TrimSuffix(k.Capabilities.Platform, "-webhook"); got != adapter {
			t.Errorf("%s routes to an adapter calling itself %q, want %q", k.Name, k.Capabilities.Platform, adapter)
		}
		if k.Capabilities.MaxTextGraphemes <= 0 || k.Capabilities.Handle == "" || k.Capabilities.ReadBack == "" {
			t.Errorf("%s: capabilities incomplete: %+v", k.Name, k.Capabilities)
		}
	}
	_, err := Connector{}.Client(context.Background(), post.Account{ID: "a", Platform: "myspace"}, platform.Credential{AccessToken: "-"})
	if err == nil || !strings.Contains(err.Error(), `"myspace"`) {
		t.Errorf("unknown platform: %v", err)
	}
}

// The sandbox is the Mastodon adapter without Mastodon's posting limits.
func TestSandboxIsUnpaced(t *testing.T) {
	m, _ := Lookup(Mastodon)
	s, _ := Lookup(Sandbox)
	if len(m.Capabilities.PostingLimits) == 0 || len(s.Capabilities.PostingLimits) != 0 {
		t.Errorf("posting limits: mastodon %v, sandbox %v", m.Capabilities.PostingLimits, s.Capabilities.PostingLimits)
	}
}

// The guarantees the table promises, per platform: a change of an
// adapter's capabilities that weakens one shows here.
func TestGuarantees(t *testing.T) {
	want := map[string]platform.Guarantee{
		Mastodon: platform.ReadBack, Sandbox: platform.ReadBack, Bluesky: platform.Exact, X: platform.ReadBack, Threads: platform.ReadBack,
		Discord: platform.ReadBack, DiscordWebhook: platform.Human, Telegram: platform.Human, LinkedIn: platform.Human,
	}
	for _, k := range Kinds() {
		if k.Guarantee != want[k.Name] {
			t.Errorf("%s: guarantee %q, want %q", k.Name, k.Guarantee, want[k.Name])
		}
	}
}

// X weighs text (a URL is 23, an emoji 2): Measure uses the adapter's
// count, not graphemes.
func TestMeasureUsesThePlatformsCount(t *testing.T) {
	k, ok := Lookup(X)
	if !ok {
		t.Fatal("no x")
	}
	if got := k.Measure("see https://example.com/a/very/long/path/that/is/long 👋"); got != 4+23+1+2 {
		t.Errorf("x measure = %d, want 30", got)
	}
	m, _ := Lookup(Mastodon)
	if got := m.Measure("👋 hi"); got != 4 {
		t.Errorf("mastodon measure = %d, want 4 graphemes", got)
	}
}

// Telegram's photo caption is shorter than its message: the limits that
// validation reads carry both, and the table says so.
func TestTextLimitWithMedia(t *testing.T) {
	tg, _ := Lookup(Telegram)
	if got, want := tg.Limits(), (post.Limits{MaxTextGraphemes: 4096, MaxTextWithMedia: 1024, MaxMedia: 1}); got != want {
		t.Errorf("telegram limits = %+v, want %+v", got, want)
	}
	if got, want := tg.AccountLimits(), (post.Limits{MaxTextGraphemes: 4096, MaxMedia: 1}); got != want {
		t.Errorf("telegram account limits = %+v, want %+v (the with-media limit stays the catalog's)", got, want)
	}
	if got := tg.TextLimit(); got != "4096 (1024 with media)" {
		t.Errorf("telegram TextLimit = %q", got)
	}
	m, _ := Lookup(Mastodon)
	if got := m.TextLimit(); got != "500" {
		t.Errorf("mastodon TextLimit = %q, want 500", got)
	}
}

// Bluesky limits the text's UTF-8 bytes besides its characters: the
// limits validation reads carry both, an account's stored limits only the
// characters (the bytes stay the catalog's), and the table says so.
func TestTextLimitInBytes(t *testing.T) {
	b, _ := Lookup(Bluesky)
	if got, want := b.Limits(), (post.Limits{MaxTextGraphemes: 300, MaxTextBytes: 3000, MaxMedia: 4}); got != want {
		t.Errorf("bluesky limits = %+v, want %+v", got, want)
	}
	if got, want := b.AccountLimits(), (post.Limits{MaxTextGraphemes: 300, MaxMedia: 4}); got != want {
		t.Errorf("bluesky account limits = %+v, want %+v", got, want)
	}
	if got := b.TextLimit(); got != "300 (and 3000 bytes)" {
		t.Errorf("bluesky TextLimit = %q", got)
	}
}

// Validation reads Bluesky's text limits from the catalog: 300
// characters as the platform counts them (an Indic conjunct such as "क्षि"
// is one, Unicode 15.1's rule) and 3,000 bytes of UTF-8. A text over
// either is refused at `post add`, naming the field and the limit, instead
// of failing at its slot.
func TestBlueskyTextLimitsAtValidation(t *testing.T) {
	rules := post.Rules{
		Accounts: map[post.AccountID]post.Account{"sky": {ID: "sky", Platform: Bluesky}},
		Limits: func(p string) (post.Limits, bool) {
			k, ok := Lookup(p)
			return k.Limits(), ok
		},
		Measure: func(p, text string) int {
			k, _ := Lookup(p)
			return k.Measure(text)
		},
		Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	}
	family := "👨‍👩‍👧‍👦" // one character, 25 bytes
	tests := []struct {
		name, text, wantErr string
	}{
		{"300 letters", strings.Repeat("a", 300), ""},
		{"301 letters", strings.Repeat("a", 301), "body: is 301 characters as bluesky counts them, over its limit of 300 for sky"},
		{"300 characters of conjuncts", strings.Repeat("क्षि ", 150), ""},
		{"120 families, 3000 bytes", strings.Repeat(family, 120), ""},
		{"121 families, 3025 bytes", strings.Repeat(family, 121), "body: is 3025 bytes of UTF-8, over bluesky's limit of 3000 bytes for sky; shorten it by 25 bytes"},
		{"300 conjuncts, 3600 bytes", strings.Repeat("क्षि", 300), "body: is 3600 bytes of UTF-8, over bluesky's limit of 3000 bytes for sky"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := post.Draft{ID: "p1", Body: tt.text, Targets: []post.DraftTarget{{Account: "sky", At: "2026-12-01T09:00:00Z"}}}
			_, err := d.Validate(rules)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
