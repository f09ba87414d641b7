package threads

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// Graph API error codes this package tells apart
// (https://developers.facebook.com/docs/graph-api/guides/error-handling,
// Error Codes; the throttling codes also in
// https://developers.facebook.com/docs/graph-api/overview/rate-limiting).
const (
	// codeUnknown ("API Unknown") and codeService ("API Service") are
	// "temporary issue due to downtime. Wait and retry the operation".
	codeUnknown = 1
	codeService = 2
	// codeTooManyCalls (app), codeUserTooManyCalls (user),
	// codePageTooManyCalls (page) and codeRateLimit ("calls to this api have
	// exceeded the rate limit") are throttling: "Wait and retry the
	// operation".
	codeTooManyCalls     = 4
	codeUserTooManyCalls = 17
	codePageTooManyCalls = 32
	codeRateLimit        = 613
	// codePermission (10) and 200–299 are a missing or removed
	// permission.
	codePermission = 10
	// codeInvalidParameter is "Invalid parameter"; with subcodeNotExist it
	// is the Graph API's answer for an object that does not exist or cannot
	// be loaded ("Unsupported get request. Object with ID … does not
	// exist").
	codeInvalidParameter = 100
	subcodeNotExist      = 33
	// codeSession (102) and codeTokenExpired (190, "Access token has
	// expired", also revoked or invalid) mean the token is refused.
	codeSession      = 102
	codeTokenExpired = 190
	// codeDuplicatePost is "Duplicate Post: Duplicate posts cannot be
	// published consecutively". Threads does not document it; if it ever
	// answers it, it is a signal to look, as on other platforms.
	codeDuplicatePost = 506
)

// rateLimitWait is the wait for a throttling answer without Retry-After.
// Meta gives none: platform rate limits are counted over "a rolling one
// hour window" and throttled calls fail "until enough time has passed for
// the call count to drop below the limit"
// (https://developers.facebook.com/docs/graph-api/overview/rate-limiting),
// so one hour is the longest a throttle can last.
const rateLimitWait = time.Hour

// Rejected reasons this package sets besides the generic "http_<status>"
// of httpcall.
const (
	// ReasonTextTooLong: the text is over MaxTextLength as MeasureText
	// counts it; nothing was sent.
	ReasonTextTooLong = "text_too_long"
	// ReasonEmptyText: a text post without text; nothing was sent.
	ReasonEmptyText = "empty_text"
	// ReasonMediaUnsupported: remote media ids (PublishRequest.MediaIDs)
	// or UploadMedia; Threads has no upload and takes images only by
	// public URL (PublishRequest.Media, see the package doc).
	ReasonMediaUnsupported = "media_unsupported"
	// ReasonMediaNeedsURL: an attachment without an absolute http(s) URL
	// for Threads to fetch.
	ReasonMediaNeedsURL = platform.ReasonMediaNeedsURL
	// ReasonMediaFormat: an attachment that is not JPEG or PNG.
	ReasonMediaFormat = "media_format_unsupported"
	// ReasonTooManyMedia: more than MaxCarouselItems attachments.
	ReasonTooManyMedia = "too_many_media"
	// ReasonAltTooLong: alt text over 1,000 characters.
	ReasonAltTooLong = "alt_text_too_long"
	// ReasonMediaFailed: a media container ended in status ERROR (Threads
	// could not fetch or process the image); the message carries Meta's
	// error_message.
	ReasonMediaFailed = "media_processing_failed"
	// ReasonInvalidParameter: Graph error code 100.
	ReasonInvalidParameter = "invalid_parameter"
	// ReasonPermissionDenied: Graph error code 10 or 200–299 (the token
	// lacks a permission such as threads_content_publish).
	ReasonPermissionDenied = "permission_denied"
)

// graphError is the Graph API's error object
// (https://developers.facebook.com/docs/graph-api/guides/error-handling,
// Error Responses).
type graphError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
	Subcode int    `json:"error_subcode"`
	TraceID string `json:"fbtrace_id"`
}

// parseGraphError reads the {"error":{…}} body of an answer; ok is false
// when the body is not one (a proxy's page, an empty body).
func parseGraphError(body []byte) (graphError, bool) {
	var env struct {
		Error *graphError `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil {
		return graphError{}, false
	}
	return *env.Error, true
}

// notExist reports whether the answer says the object does not exist:
// Graph error 100 with subcode 33, or a 404 carrying a Graph error.
func notExist(resp *httpcall.Response) bool {
	ge, ok := parseGraphError(resp.Body)
	if !ok {
		return false
	}
	return resp.Status == http.StatusNotFound || ge.Code == codeInvalidParameter && ge.Subcode == subcodeNotExist
}

func rateLimited(code int) bool {
	switch code {
	case codeTooManyCalls, codeUserTooManyCalls, codePageTooManyCalls, codeRateLimit:
		return true
	}
	return false
}

// newHTTP returns the httpcall client of this package: error text from the
// Graph error's message with every secret that secrets returns blanked,
// and a default wait for a 429 without Retry-After.
func newHTTP(hc *http.Client, secrets func() []string) *httpcall.Client {
	h := httpcall.New(hc)
	h.Describe = func(resp *httpcall.Response) string { return describe(resp, secrets()) }
	h.RetryAfter = func(resp *httpcall.Response, _ time.Time) time.Duration {
		if resp.Status == http.StatusTooManyRequests {
			return rateLimitWait
		}
		return 0
	}
	return h
}

// describe is the Graph error's message, with the code appended so that
// an operator can look it up, and every secret replaced; "" when the body
// is no Graph error (httpcall then uses the status text, never the body).
func describe(resp *httpcall.Response, secrets []string) string {
	ge, ok := parseGraphError(resp.Body)
	if !ok {
		return ""
	}
	msg := strings.TrimSpace(ge.Message)
	if msg == "" {
		msg = strings.ToLower(http.StatusText(resp.Status))
	}
	if ge.Code != 0 {
		if ge.Subcode != 0 {
			msg = fmt.Sprintf("%s (code %d, subcode %d)", msg, ge.Code, ge.Subcode)
		} else {
			msg = fmt.Sprintf("%s (code %d)", msg, ge.Code)
		}
	}
	return redact(stripURLQueries(msg), secrets)
}

// urlQuery matches an http(s) URL that carries a query or a fragment, as
// is or percent-encoded (an answer may quote a request's form, where
// image_url is encoded): group 1 is the URL up to its first "?" or "#"
// (or "%3F", "%23"); the match runs on to the next space, quote, angle
// bracket or backtick.
var urlQuery = regexp.MustCompile("(?i)(https?(?::|%3A)(?://|%2F%2F)[^\\s\"'<>`?#]*?)(?:\\?|%3F|#|%23)[^\\s\"'<>`]*")

// stripURLQueries replaces the query (and fragment) of every http(s) URL
// in s, a text of Meta's that goes into an error (a Graph error's message,
// a container's error_message), with "?[redacted]": it may quote an image
// URL whose query signs it (a presigned S3 URL), and one of an earlier
// attempt, which redactMedia does not know, must not reach a ledger
// reason or a log either. The scheme, host and path are kept.
func stripURLQueries(s string) string {
	return urlQuery.ReplaceAllString(s, "${1}?[redacted]")
}

// redact replaces every non-empty secret in s, as is and URL-encoded (an
// echoed request URL carries the token encoded).
func redact(s string, secrets []string) string {
	all := make([]string, 0, 2*len(secrets))
	for _, sec := range secrets {
		all = append(all, sec, url.QueryEscape(sec))
	}
	return httpcall.RedactString(s, all...)
}

// classify translates an answer that is not a success. A Graph error body
// on a status below 500 decides by its code:
//
//   - 4, 17, 32, 613 (throttling): NotPerformed, RetryAfter from
//     Retry-After or rateLimitWait; Meta answers these with HTTP 400 or
//     403, and a throttled call was not executed;
//   - 190, 102 (token expired, revoked or invalid): Unauthorized;
//   - 1, 2 (temporary failure): on a write Ambiguous (the platform says
//     something went wrong, not that nothing happened), on a read
//     NotPerformed;
//   - 506: Rejected with platform.ReasonDuplicate;
//   - 10, 200–299: Rejected ReasonPermissionDenied; 100: Rejected
//     ReasonInvalidParameter.
//
// Anything else, every 401 (Unauthorized whatever its code) and every 5xx
// (which a proxy may answer after forwarding a write) is httpcall's
// classification.
func classify(h *httpcall.Client, now time.Time, op string, resp *httpcall.Response, write bool) error {
	ge, ok := parseGraphError(resp.Body)
	if !ok || resp.Status >= 500 || resp.Status == http.StatusUnauthorized {
		return h.Classify(op, resp, write)
	}
	msg := fmt.Sprintf("%s: %s", op, h.Describe(resp))
	switch {
	case rateLimited(ge.Code):
		wait, ok := httpcall.StandardRetryAfter(resp.Header, now)
		if !ok {
			wait = rateLimitWait
		}
		return &platform.NotPerformed{Status: resp.Status, RetryAfter: wait, Message: msg}
	case ge.Code == codeTokenExpired, ge.Code == codeSession:
		return &platform.Unauthorized{Message: msg}
	case ge.Code == codeUnknown, ge.Code == codeService:
		if write {
			return &platform.Ambiguous{Status: resp.Status, Err: errors.New(msg + "; the platform reports a temporary failure, the call may have taken effect")}
		}
		wait, _ := httpcall.StandardRetryAfter(resp.Header, now)
		return &platform.NotPerformed{Status: resp.Status, RetryAfter: wait, Message: msg}
	case ge.Code == codeDuplicatePost:
		return &platform.Rejected{Status: resp.Status, Reason: platform.ReasonDuplicate, Message: msg}
	case ge.Code == codePermission, ge.Code >= 200 && ge.Code <= 299:
		return &platform.Rejected{Status: resp.Status, Reason: ReasonPermissionDenied, Message: msg}
	case ge.Code == codeInvalidParameter:
		return &platform.Rejected{Status: resp.Status, Reason: ReasonInvalidParameter, Message: msg}
	}
	return h.Classify(op, resp, write)
}
