package httpcall

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"oncepost/shared/platform"
)

// redactedMark replaces a secret in a text.
const redactedMark = "[redacted]"

// RedactString returns s with every non-empty secret in it replaced by
// "[redacted]". Longer secrets are replaced first, so that a secret that
// holds another (a Telegram bot token and its secret part) is replaced
// whole. It is for texts built from a platform's answer, which a proxy or
// the platform itself may have filled with the request's token (an echoed
// Authorization header or request path), before they become an error's
// message, a log line or the ledger's reason.
func RedactString(s string, secrets ...string) string {
	if s == "" {
		return s
	}
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(secret string) bool { return secret == "" })
	slices.SortStableFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, redactedMark)
	}
	return s
}

// Redact returns err with every non-empty secret replaced as RedactString
// does, keeping its failure class: a *platform.Rejected, NotPerformed,
// Unauthorized, Ambiguous or Inconclusive found in err (errors.As) is
// rebuilt with the same class and the same Status, RetryAfter and Reason
// (Reason and the texts redacted), and nothing else of err's chain. Any
// other error becomes a plain error with the redacted text, as does an
// Ambiguous's Err; through such a plain error only a context error
// (context.Canceled, context.DeadlineExceeded) stays reachable with
// errors.Is, since the rest of the chain may hold the secret.
//
// nil stays nil, and an error whose text holds none of the secrets is
// returned as it is, chain and all. It is an adapter's last guard on the
// errors it returns, for secrets that travel where an error may quote
// them (a token in the URL path, an echoed header).
func Redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if RedactString(text, secrets...) == text {
		return err
	}
	clean := func(s string) string { return RedactString(s, secrets...) }
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		un  *platform.Unauthorized
		amb *platform.Ambiguous
		inc *platform.Inconclusive
	)
	switch {
	case errors.As(err, &rej):
		return &platform.Rejected{Status: rej.Status, Reason: clean(rej.Reason), Message: clean(rej.Message)}
	case errors.As(err, &np):
		return &platform.NotPerformed{Status: np.Status, RetryAfter: np.RetryAfter, Message: clean(np.Message)}
	case errors.As(err, &un):
		return &platform.Unauthorized{Message: clean(un.Message)}
	case errors.As(err, &amb):
		out := &platform.Ambiguous{Status: amb.Status}
		if amb.Err != nil {
			out.Err = plain(amb.Err, clean)
		}
		return out
	case errors.As(err, &inc):
		return &platform.Inconclusive{Message: clean(inc.Message)}
	}
	return plain(err, clean)
}

// plain replaces err by its cleaned text, keeping a context error
// reachable through Unwrap.
func plain(err error, clean func(string) string) error {
	r := &redactedError{msg: clean(err.Error())}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		r.cause = context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		r.cause = context.Canceled
	}
	return r
}

// redactedError is an error's redacted text, wrapping at most a context
// error.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// URLSecrets are the parts of a signed URL (a presigned S3 URL's
// X-Amz-Signature, X-Amz-Credential and X-Amz-Security-Token, an upload
// URL's token) that no error may carry, for Redact: the URL as given and
// without its scheme, its query, and each query value of 8 bytes or more,
// raw and decoded, each also form-encoded (as a request body carries it, which an
// answer may echo). Shorter values ("0", "beta", "uploads") are ordinary
// words, and replacing them would garble a message for nothing. A URL
// that does not parse is a secret whole.
func URLSecrets(raw string) []string {
	var out []string
	add := func(s ...string) {
		for _, v := range s {
			if v != "" {
				out = append(out, v, url.QueryEscape(v))
			}
		}
	}
	add(raw)
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return out
	}
	add(u.Host+u.EscapedPath()+"?"+u.RawQuery, u.RawQuery)
	for _, part := range strings.Split(u.RawQuery, "&") {
		_, v, _ := strings.Cut(part, "=")
		if len(v) < 8 {
			continue
		}
		add(v)
		if dec, err := url.QueryUnescape(v); err == nil {
			add(dec)
		}
	}
	return out
}
