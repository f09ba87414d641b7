package httpcall_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	botToken  = "123456:AAE-secret_part"
	botSecret = "AAE-secret_part"
)

func TestRedactString(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		secrets []string
		want    string
	}{
		{"no secrets", "refused Bearer tok", nil, "refused Bearer tok"},
		{"empty text", "", []string{"tok"}, ""},
		{"one secret, every occurrence", "tok and tok again", []string{"tok"}, "[redacted] and [redacted] again"},
		{"several secrets", "access a1, refresh r1", []string{"a1", "r1"}, "access [redacted], refresh [redacted]"},
		{"empty secrets are ignored", "a1 b", []string{"", "a1", ""}, "[redacted] b"},
		{"only empty secrets", "a1 b", []string{""}, "a1 b"},
		{"absent secret", "nothing here", []string{"tok"}, "nothing here"},
		{"a secret holding another is replaced whole, whatever the order",
			"/bot" + botToken + "/sendMessage", []string{botSecret, botToken}, "/bot[redacted]/sendMessage"},
		{"the part alone is replaced too", "secret " + botSecret, []string{botSecret, botToken}, "secret [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := httpcall.RedactString(tt.s, tt.secrets...); got != tt.want {
				t.Errorf("RedactString(%q, %q) = %q, want %q", tt.s, tt.secrets, got, tt.want)
			}
		})
	}
}

func TestRedactStringDoesNotReorderItsArgument(t *testing.T) {
	secrets := []string{"a", "", "abc"}
	httpcall.RedactString("abc a", secrets...)
	if diff := cmp.Diff([]string{"a", "", "abc"}, secrets); diff != "" {
		t.Errorf("secrets changed (-want +got):\n%s", diff)
	}
}

// TestRedactKeepsTheClass checks that each failure class comes back with
// its class and fields, only the texts redacted.
func TestRedactKeepsTheClass(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"rejected",
			&platform.Rejected{Status: 400, Reason: "http_400", Message: "send message: proxy error for /bot" + botToken + "/sendMessage"},
			outcome{Class: classRejected, Status: 400, Reason: "http_400", Message: "send message: proxy error for /bot[redacted]/sendMessage"}},
		{"rejected reason",
			&platform.Rejected{Status: 400, Reason: "bad_" + botSecret, Message: "refused"},
			outcome{Class: classRejected, Status: 400, Reason: "bad_[redacted]", Message: "refused"}},
		{"not performed",
			&platform.NotPerformed{Status: 429, RetryAfter: 3 * time.Second, Message: "slow down, " + botToken},
			outcome{Class: classNotPerformed, Status: 429, RetryAfter: 3 * time.Second, Message: "slow down, [redacted]"}},
		{"unauthorized",
			&platform.Unauthorized{Message: "token " + botToken + " revoked"},
			outcome{Class: classUnauthorized, Message: "token [redacted] revoked"}},
		{"ambiguous",
			&platform.Ambiguous{Status: 502, Err: fmt.Errorf("send message: %s", "bad gateway at /bot"+botToken)},
			outcome{Class: classAmbiguous, Status: 502, Message: "send message: bad gateway at /bot[redacted]"}},
		{"a class wrapped in another error is found and rebuilt alone",
			fmt.Errorf("publish %s: %w", botToken, &platform.Rejected{Status: 403, Reason: "http_403", Message: "forbidden"}),
			outcome{Class: classRejected, Status: 403, Reason: "http_403", Message: "forbidden"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := httpcall.Redact(tt.err, botToken, botSecret)
			if diff := cmp.Diff(tt.want, outcomeOf(t, got)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if strings.Contains(got.Error(), botSecret) {
				t.Errorf("error %q still carries the secret", got)
			}
		})
	}
}

func TestRedactInconclusive(t *testing.T) {
	err := httpcall.Redact(&platform.Inconclusive{Message: "read 200 posts of " + botToken}, botToken)
	var inc *platform.Inconclusive
	if !errors.As(err, &inc) || inc.Message != "read 200 posts of [redacted]" {
		t.Errorf("Redact = %#v, want Inconclusive with the message redacted", err)
	}
}

func TestRedactAmbiguousWithoutCause(t *testing.T) {
	// Only the status could carry nothing; the error comes back as it is.
	in := &platform.Ambiguous{Status: 500}
	if got := httpcall.Redact(in, botToken); got != error(in) {
		t.Errorf("Redact = %#v, want the same error", got)
	}
}

// TestRedactLeavesCleanErrorsAlone: an error without any of the secrets is
// returned as it is, its whole chain reachable.
func TestRedactLeavesCleanErrorsAlone(t *testing.T) {
	sentinel := errors.New("sentinel")
	in := fmt.Errorf("op: %w", &platform.Ambiguous{Err: sentinel})
	for _, secrets := range [][]string{{botToken}, {""}, nil} {
		got := httpcall.Redact(in, secrets...)
		if got != in {
			t.Errorf("Redact(err, %q) = %#v, want the same error", secrets, got)
		}
		if !errors.Is(got, sentinel) {
			t.Errorf("Redact(err, %q) lost the chain", secrets)
		}
	}
	if got := httpcall.Redact(nil, botToken); got != nil {
		t.Errorf("Redact(nil) = %v, want nil", got)
	}
}

// TestRedactPlainErrors: an error of no failure class becomes a plain
// error with its text redacted; only a context error stays reachable.
func TestRedactPlainErrors(t *testing.T) {
	sentinel := errors.New("sentinel " + botToken)
	got := httpcall.Redact(fmt.Errorf("call /bot%s/getMe: %w", botToken, sentinel), botToken, botSecret)
	if want := "call /bot[redacted]/getMe: sentinel [redacted]"; got.Error() != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	if errors.Is(got, sentinel) {
		t.Error("the redacted error still reaches the original chain")
	}

	for _, cause := range []error{context.DeadlineExceeded, context.Canceled} {
		got := httpcall.Redact(fmt.Errorf("call /bot%s/getMe: %w", botToken, cause), botToken)
		if !errors.Is(got, cause) {
			t.Errorf("Redact(%v) = %#v, want %v reachable", cause, got, cause)
		}
		if strings.Contains(got.Error(), botToken) {
			t.Errorf("error %q still carries the token", got)
		}
	}

	amb := httpcall.Redact(&platform.Ambiguous{Err: fmt.Errorf("post %s: %w", botToken, context.DeadlineExceeded)}, botToken)
	if o := outcomeOf(t, amb); o.Class != classAmbiguous || o.Message != "post [redacted]: context deadline exceeded" {
		t.Errorf("outcome %+v, want ambiguous with the cause redacted", o)
	}
	if !errors.Is(amb, context.DeadlineExceeded) {
		t.Errorf("Ambiguous %#v lost its context error", amb)
	}
}

// Every form of a signed URL's secret parts that a message may quote is
// redacted: the URL, form-encoded, without its scheme, its query, and a
// long query value raw, decoded and encoded; short values stay.
func TestURLSecrets(t *testing.T) {
	const signed = "https://bucket.s3.amazonaws.com/media/ab.png?X-Amz-Credential=AKIAEXAMPLE%2F20261201%2Fus-east-1&X-Amz-Signature=0123456789abcdef&x-id=Get&v=1"
	secrets := httpcall.URLSecrets(signed)
	for _, leak := range []string{
		signed,
		url.QueryEscape(signed),
		"bucket.s3.amazonaws.com/media/ab.png?X-Amz-Credential=AKIAEXAMPLE%2F20261201%2Fus-east-1&X-Amz-Signature=0123456789abcdef&x-id=Get&v=1",
		"0123456789abcdef",
		"AKIAEXAMPLE%2F20261201%2Fus-east-1",
		"AKIAEXAMPLE/20261201/us-east-1",
		url.QueryEscape("AKIAEXAMPLE/20261201/us-east-1"),
	} {
		if got := httpcall.RedactString("fetch failed: "+leak, secrets...); strings.Contains(got, leak) || !strings.Contains(got, "[redacted]") {
			t.Errorf("RedactString(%q) = %q, want it redacted", leak, got)
		}
	}
	if got := httpcall.RedactString("v=1 x-id=Get", secrets...); got != "v=1 x-id=Get" {
		t.Errorf("short values were redacted: %q", got)
	}
	if got := httpcall.URLSecrets(""); len(got) != 0 {
		t.Errorf("URLSecrets(\"\") = %q, want none", got)
	}
}
