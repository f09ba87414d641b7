package catalog

import (
	"context"
	"strings"
	"testing"

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
