package platformtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// memPlatform is an in-memory platform with expiring, rotating tokens,
// and an adapter for it (memClient) that can be given one bug.
type memPlatform struct {
	bug string // "", "leak", "double-refresh" or "keep-refresh"

	mu        sync.Mutex
	access    string
	refresh   string
	refreshes int
	issued    int
	posts     []platform.RemotePost
	failNext  bool // refuse the next create
	refuse    bool // the access token has expired and every refresh is refused
}

func (p *memPlatform) Client(_ context.Context, _ post.Account, c platform.Credential) (platform.Client, error) {
	return &memClient{p: p, token: c.AccessToken}, nil
}

type memClient struct {
	p     *memPlatform
	token string
}

func (c *memClient) authorized() error {
	if c.p.refuse || c.token != c.p.access {
		return &platform.Unauthorized{Message: "memory: the access token has expired"}
	}
	return nil
}

func (c *memClient) Publish(_ context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if err := c.authorized(); err != nil {
		return platform.Receipt{}, err
	}
	if c.p.failNext {
		c.p.failNext = false
		msg := "memory: posting is suspended"
		if c.p.bug == "leak" {
			msg += " for the token " + c.token
		}
		return platform.Receipt{}, &platform.Rejected{Status: 403, Reason: "suspended", Message: msg}
	}
	id := fmt.Sprintf("mem-%d", len(c.p.posts)+1)
	c.p.posts = append(c.p.posts, platform.RemotePost{RemoteID: id, Text: req.Text})
	return platform.Receipt{RemoteID: id}, nil
}

func (c *memClient) Recent(_ context.Context, n int) ([]platform.RemotePost, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if err := c.authorized(); err != nil {
		return nil, err
	}
	var out []platform.RemotePost
	for i := len(c.p.posts) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, c.p.posts[i])
	}
	return out, nil
}

func (c *memClient) Lookup(context.Context, platform.LookupQuery) (platform.RemotePost, bool, error) {
	return platform.RemotePost{}, false, nil
}

func (c *memClient) Delete(context.Context, string) error { return nil }

func (c *memClient) Exists(context.Context, string) (bool, error) { return false, nil }

func (c *memClient) UploadMedia(context.Context, platform.MediaUpload) (platform.MediaReceipt, error) {
	return platform.MediaReceipt{}, &platform.Rejected{Reason: "media_unsupported", Message: "memory: no media"}
}

func (c *memClient) Refresh(_ context.Context, cred platform.Credential) (platform.Credential, error) {
	next, err := c.p.grant(cred.RefreshToken)
	if err == nil && c.p.bug == "double-refresh" {
		// A bug: the grant sent again, with the token it just spent.
		_, _ = c.p.grant(cred.RefreshToken)
	}
	if err == nil && c.p.bug == "keep-refresh" {
		// A bug: the rotated refresh token dropped.
		next.RefreshToken = cred.RefreshToken
	}
	return next, err
}

// grant is the platform's token endpoint.
func (p *memPlatform) grant(refresh string) (platform.Credential, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refreshes++
	if p.refuse || refresh != p.refresh {
		return platform.Credential{}, &platform.Rejected{Status: 400, Reason: platform.ReasonReconnectNeeded, Message: "memory: invalid_grant"}
	}
	p.issued++
	p.access = fmt.Sprintf("mem-access-rotated-%d", p.issued)
	p.refresh = fmt.Sprintf("mem-refresh-rotated-%d", p.issued)
	return platform.Credential{AccessToken: p.access, RefreshToken: p.refresh}, nil
}

func (c *memClient) Capabilities() platform.Capabilities {
	return platform.Capabilities{Platform: "memory", ReadableHistory: true, MaxTextGraphemes: 500, MaxMedia: 0}
}

func memFake(bug string) Fake {
	p := &memPlatform{bug: bug, access: "mem-access-not-issued-yet", refresh: "mem-refresh-initial"}
	return Fake{
		Platforms:  p,
		Account:    post.Account{Platform: "memory", BaseURL: "memory:", RemoteID: "me"},
		Credential: platform.Credential{AccessToken: "mem-access-initial", RefreshToken: "mem-refresh-initial"},
		RefreshCalls: func() int {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.refreshes
		},
		Posts: func() int {
			p.mu.Lock()
			defer p.mu.Unlock()
			return len(p.posts)
		},
		Issued: func() (string, string) {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.access, p.refresh
		},
		FailNextPublish: func() {
			p.mu.Lock()
			p.failNext = true
			p.mu.Unlock()
		},
		RefuseRefresh: func() {
			p.mu.Lock()
			p.refuse = true
			p.mu.Unlock()
		},
	}
}

// bugEnv names the bug TestMemoryAdapter's adapter has, for the runs of
// TestHarnessCatchesBugs.
const bugEnv = "PLATFORMTEST_BUG"

// The harness passes a correct adapter (with no bug set, as in a normal
// run of the package).
func TestMemoryAdapter(t *testing.T) {
	bug := os.Getenv(bugEnv)
	t.Run("refresh concurrency", func(t *testing.T) { RefreshConcurrency(t, memFake(bug), 8) })
	t.Run("no secrets", func(t *testing.T) { NoSecretsInOutput(t, memFake(bug)) })
}

// The harness fails an adapter with a bug, saying what is wrong: each bug
// runs TestMemoryAdapter in a child process of this test binary.
func TestHarnessCatchesBugs(t *testing.T) {
	if os.Getenv(bugEnv) != "" {
		t.Skip("in a child run")
	}
	tests := []struct{ bug, want string }{
		{"leak", "carries the refreshed access token"},
		{"double-refresh", "the fake received 2 refresh requests, want exactly 1"},
		{"keep-refresh", "the stored refresh token is not the fake's new refresh token"},
	}
	for _, tc := range tests {
		t.Run(tc.bug, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMemoryAdapter$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), bugEnv+"="+tc.bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the harness passed an adapter with the bug %q:\n%s", tc.bug, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("the harness failed the adapter with the bug %q without saying %q:\n%s", tc.bug, tc.want, out)
			}
			if tc.bug == "leak" && strings.Contains(string(out), "mem-access-rotated-1") {
				t.Errorf("the failure message prints the secret it found:\n%s", out)
			}
		})
	}
}
