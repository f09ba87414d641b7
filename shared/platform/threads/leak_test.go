package threads

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// TestMain fails the package when any error a test classified (outcomeOf,
// recordErr) carries a secret of the fakes: whatever order the tests run
// in, all of them have run by then.
func TestMain(m *testing.M) {
	os.Exit(adaptertest.Main(m, &seen, secretValues, 0))
}

// secretValues are the tokens, codes and client secrets the fakes use,
// and the signing parameters of the images' URLs, this attempt's and an
// earlier one's (media_test.go).
var secretValues = []string{fakeToken, "THAAtoken-rotated-elsewhere", "THshort-1", "THlong-1", testClientSecret, testCode, hostileToken, urlSignature, urlCredential, oldSignature}

const hostileToken = "THAAhostile-secret-42"

// TestNoTokenInErrors drives every call into failures whose error bodies
// echo the token (as a careless API might) and into transport failures of
// the refresh, whose URL carries the token; no returned error may contain
// it.
func TestNoTokenInErrors(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		graphErr(w, http.StatusBadRequest, 24, 0, "OAuthException",
			fmt.Sprintf("bad request %s %s (auth %q, query %q)", r.Method, r.URL.String(), auth, r.URL.RawQuery))
	})
	echo5xx := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		graphErr(w, http.StatusInternalServerError, 2, 0, "OAuthException", "failed for "+r.URL.String()+" "+r.Header.Get("Authorization"))
	})
	expired := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		graphErr(w, http.StatusBadRequest, 190, 0, "OAuthException", "token "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+r.URL.Query().Get("access_token")+" has expired")
	})
	cred := platform.Credential{AccessToken: hostileToken, ExpiresAt: fixedNow.Add(30 * 24 * time.Hour)}
	calls := map[string]func(c *Client) error{
		"publish": func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x"})
			return err
		},
		"resume": func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Resume: "17800000000000001"})
			return err
		},
		"lookup": func(c *Client) error {
			_, _, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: "f", Checkpoint: "17800000000000001"})
			return err
		},
		"recent": func(c *Client) error {
			_, err := c.Recent(context.Background(), 5)
			return err
		},
		"delete": func(c *Client) error { return c.Delete(context.Background(), "18000000000000001") },
		"exists": func(c *Client) error {
			_, err := c.Exists(context.Background(), "18000000000000001")
			return err
		},
		"refresh": func(c *Client) error {
			_, err := c.Refresh(context.Background(), cred)
			return err
		},
		"refresh timeout": func(c *Client) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
			defer cancel()
			_, err := c.Refresh(ctx, cred)
			return err
		},
	}
	var errs []error
	for name, h := range map[string]http.Handler{"echo": echo, "echo 5xx": echo5xx, "expired": expired} {
		srv := newServer(t, h)
		for call, fn := range calls {
			c := newClient(t, srv.URL, func(cfg *Config) { cfg.Credential = cred })
			err := fn(c)
			if err == nil {
				t.Errorf("%s/%s: no error", name, call)
				continue
			}
			errs = append(errs, err)
		}
	}
	refused := newClient(t, refusedURL(t), func(cfg *Config) { cfg.Credential = cred })
	for _, fn := range calls {
		errs = append(errs, fn(refused))
	}
	silent := newServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { blockUntilGone(t, r) }))
	c := newClient(t, silent.URL, func(cfg *Config) { cfg.Credential = cred })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Refresh(ctx, cred)
	errs = append(errs, err)
	if outcomeOf(t, err).Class != "ambiguous" {
		t.Errorf("refresh timeout: %v, want ambiguous", err)
	}

	var checked adaptertest.Errors
	for _, err := range errs {
		recordErr(checked.Add(err))
	}
	checked.CheckNoSecrets(t, hostileToken)
	if n := checked.Len(); n < 20 {
		t.Errorf("checked %d errors, want the whole battery", n)
	}
	if s := fmt.Sprint(cred); strings.Contains(s, hostileToken) {
		t.Errorf("credential prints its token: %s", s)
	}
	if s := fmt.Sprintf("%v %#v", OAuthConfig{ClientSecret: testClientSecret}, OAuthConfig{ClientSecret: testClientSecret}); strings.Contains(s, testClientSecret) {
		t.Errorf("OAuthConfig prints its secret: %s", s)
	}
}
