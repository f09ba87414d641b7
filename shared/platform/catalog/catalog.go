// Package catalog knows every platform oncepost publishes to: it routes an
// account to its adapter by post.Account.Platform (Connector, the
// publishing use cases' Platforms port), and describes each platform for
// validation and for the guarantee table (Kinds, Table) that `oncepost
// platforms` prints and the README carries.
package catalog

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"oncepost/shared/graphemes"
	"oncepost/shared/platform"
	"oncepost/shared/platform/bluesky"
	"oncepost/shared/platform/discord"
	"oncepost/shared/platform/linkedin"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/telegram"
	"oncepost/shared/platform/threads"
	"oncepost/shared/platform/x"
	"oncepost/shared/post"
)

// Platform names, the values of post.Account.Platform.
const (
	Mastodon = "mastodon"
	// Sandbox is oncepost's own test platform (`oncepost sandbox`): the
	// Mastodon adapter without Mastodon's posting limits.
	Sandbox        = "sandbox"
	Bluesky        = "bluesky"
	X              = "x"
	Threads        = "threads"
	Discord        = discord.PlatformBot
	DiscordWebhook = discord.PlatformWebhook
	Telegram       = "telegram"
	LinkedIn       = "linkedin"
)

// Connector routes each account to its platform's adapter. The zero value
// works for every platform that needs no deployment-wide OAuth app;
// Mastodon, X and LinkedIn refresh grants need theirs set.
type Connector struct {
	Mastodon mastodon.Connector
	Bluesky  bluesky.Connector
	X        x.Connector
	Threads  threads.Connector
	Discord  discord.Connector
	Telegram telegram.Connector
	LinkedIn linkedin.Connector
}

// WithHTTPClient returns c with hc shared by every adapter.
func (c Connector) WithHTTPClient(hc *http.Client) Connector {
	c.Mastodon.HTTPClient = hc
	c.Bluesky.HTTPClient = hc
	c.X.HTTPClient = hc
	c.Threads.HTTPClient = hc
	c.Discord.HTTPClient = hc
	c.Telegram.HTTPClient = hc
	c.LinkedIn.HTTPClient = hc
	return c
}

// Client returns the account's client on its platform.
func (c Connector) Client(ctx context.Context, a post.Account, cred platform.Credential) (platform.Client, error) {
	switch a.Platform {
	case Mastodon:
		return c.Mastodon.Client(ctx, a, cred)
	case Sandbox:
		m := c.Mastodon
		m.Unpaced = true
		return m.Client(ctx, a, cred)
	case Bluesky:
		return c.Bluesky.Client(ctx, a, cred)
	case X:
		return c.X.Client(ctx, a, cred)
	case Threads:
		return c.Threads.Client(ctx, a, cred)
	case Discord, DiscordWebhook:
		return c.Discord.Client(ctx, a, cred)
	case Telegram:
		return c.Telegram.Client(ctx, a, cred)
	case LinkedIn:
		return c.LinkedIn.Client(ctx, a, cred)
	}
	return nil, fmt.Errorf("account %s: unknown platform %q (known: %s)", a.ID, a.Platform, strings.Join(Names(), ", "))
}

// Kind is one platform as the catalog describes it.
type Kind struct {
	// Name is post.Account.Platform.
	Name string `json:"name"`
	// Title is the platform's name for people.
	Title string `json:"title"`
	// Capabilities are the adapter's, for a typical account.
	Capabilities platform.Capabilities `json:"capabilities"`
	// Guarantee is Capabilities.Guarantee().
	Guarantee platform.Guarantee `json:"guarantee"`
	// Note qualifies the row (which accounts it describes).
	Note string `json:"note,omitempty"`

	measure func(string) int
}

// Measure counts text as the platform counts it against
// Capabilities.MaxTextGraphemes.
func (k Kind) Measure(text string) int {
	if k.measure != nil {
		return k.measure(text)
	}
	return graphemes.Count(text)
}

// Limits are the platform's default content limits.
func (k Kind) Limits() post.Limits {
	c := k.Capabilities
	return post.Limits{MaxTextGraphemes: c.MaxTextGraphemes, MaxTextWithMedia: c.MaxTextWithMedia, MaxTextBytes: c.MaxTextBytes, MaxMedia: c.MaxMedia}
}

// AccountLimits are the limits stored with an account of the kind: Limits
// without MaxTextWithMedia and MaxTextBytes, which validation reads from
// the catalog (post.Limits.Or), so a change of them reaches accounts added
// before.
func (k Kind) AccountLimits() post.Limits {
	l := k.Limits()
	l.MaxTextWithMedia, l.MaxTextBytes = 0, 0
	return l
}

// sample is an account of each kind, only to build a client whose
// Capabilities describe the platform: nothing is sent with it.
var samples = []struct {
	title, note string
	account     post.Account
	cred        platform.Credential
}{
	{"Mastodon", "", post.Account{Platform: Mastodon, BaseURL: "https://mastodon.example", RemoteID: "1"}, platform.Credential{AccessToken: "-"}},
	{"Sandbox", "oncepost's own test platform, `oncepost sandbox`", post.Account{Platform: Sandbox, BaseURL: "http://127.0.0.1:4000", RemoteID: "1"}, platform.Credential{AccessToken: "-"}},
	{"Bluesky", "", post.Account{Platform: Bluesky, RemoteID: "did:plc:sample"}, platform.Credential{AccessToken: "-"}},
	{"X", "", post.Account{Platform: X, RemoteID: "1"}, platform.Credential{AccessToken: "-"}},
	{"Threads", "", post.Account{Platform: Threads, RemoteID: "1"}, platform.Credential{AccessToken: "-"}},
	{"Discord (bot)", "", post.Account{Platform: Discord, RemoteID: "1"}, platform.Credential{AccessToken: "-"}},
	{"Discord (webhook)", "", post.Account{Platform: DiscordWebhook, RemoteID: "1"}, platform.Credential{AccessToken: "-"}},
	{"Telegram", "", post.Account{Platform: Telegram, RemoteID: "1"}, platform.Credential{AccessToken: "1:sample"}},
	{"LinkedIn", "a member; an organization page, or an app with r_member_social, is read back", post.Account{Platform: LinkedIn, RemoteID: "urn:li:person:sample"}, platform.Credential{AccessToken: "-"}},
}

// Kinds describes every platform, in the catalog's order.
func Kinds() []Kind { return slices.Clone(kinds()) }

// kinds builds every platform's description once: Lookup runs for every
// target of every post validated.
var kinds = sync.OnceValue(func() []Kind {
	var out []Kind
	for _, s := range samples {
		cl, err := Connector{}.Client(context.Background(), s.account, s.cred)
		if err != nil {
			// A sample that an adapter refuses is a bug here, caught by
			// the package's tests.
			panic(fmt.Sprintf("catalog: sample %s: %v", s.account.Platform, err))
		}
		k := Kind{Name: s.account.Platform, Title: s.title, Capabilities: cl.Capabilities(), Note: s.note}
		k.Guarantee = k.Capabilities.Guarantee()
		if m, ok := cl.(platform.TextMeasurer); ok {
			k.measure = m.MeasureText
		}
		out = append(out, k)
	}
	return out
})

// Lookup returns the platform named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range kinds() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names are the known platform names, sorted.
func Names() []string {
	var names []string
	for _, s := range samples {
		names = append(names, s.account.Platform)
	}
	sort.Strings(names)
	return names
}

// TextLimit describes the platform's text limit: "500"; "4096 (1024
// with media)" where a post with media has a lower one; "300 (and 3000
// bytes)" where the UTF-8 bytes are limited too.
func (k Kind) TextLimit() string {
	c := k.Capabilities
	var also []string
	if c.MaxTextWithMedia > 0 && c.MaxTextWithMedia < c.MaxTextGraphemes {
		also = append(also, fmt.Sprintf("%d with media", c.MaxTextWithMedia))
	}
	if c.MaxTextBytes > 0 {
		also = append(also, fmt.Sprintf("and %d bytes", c.MaxTextBytes))
	}
	if len(also) == 0 {
		return strconv.Itoa(c.MaxTextGraphemes)
	}
	return fmt.Sprintf("%d (%s)", c.MaxTextGraphemes, strings.Join(also, ", "))
}

// Table is the guarantee table in Markdown, one row per platform.
func Table() string {
	var b strings.Builder
	b.WriteString("| platform | `--platform` | guarantee | handle | read-back | text limit | media | posting limits |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, k := range Kinds() {
		c := k.Capabilities
		title := k.Title
		if k.Note != "" {
			title += " (" + k.Note + ")"
		}
		fmt.Fprintf(&b, "| %s | `%s` | **%s** | %s | %s | %s | %d | %s |\n", title, k.Name, k.Guarantee, cell(c.Handle), cell(c.ReadBack), k.TextLimit(), c.MaxMedia, rates(c.PostingLimits))
	}
	return b.String()
}

func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

func rates(rs []platform.Rate) string {
	if len(rs) == 0 {
		return "none declared"
	}
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d per %s", r.Count, per(r.Per.String())))
	}
	return strings.Join(parts, ", ")
}

// per shortens a duration's String ("15m0s" → "15m", "24h0m0s" → "24h").
func per(s string) string {
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
