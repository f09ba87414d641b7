// Package apigw runs an http.Handler behind an API Gateway HTTP API with
// IAM authorization: it turns a Lambda event of payload format 2.0 into an
// *http.Request and what the handler wrote into the integration's answer.
//
// Written by hand (about a hundred lines) rather than taken from a
// library: awslabs/aws-lambda-go-api-proxy was archived in May 2025, and
// the translation is small and fully specified by the payload format
// (API Gateway's "Working with AWS Lambda proxy integrations for HTTP
// APIs"), so a dependency would buy nothing.
package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Principal adds the caller to a request's context (the http.Handler's
// own way: httpapi.WithPrincipal) from the event; it is called only for
// a request signed by an IAM identity (IAM).
type Principal func(ctx context.Context, req events.APIGatewayV2HTTPRequest) context.Context

// IAM returns the IAM identity API Gateway verified for the request (the
// caller's ARN and its unique id, "AIDA…" or "AROA…:session"); ok is
// false when there is none.
func IAM(req events.APIGatewayV2HTTPRequest) (userARN, callerID string, ok bool) {
	a := req.RequestContext.Authorizer
	if a == nil || a.IAM == nil || (a.IAM.UserARN == "" && a.IAM.CallerID == "") {
		return "", "", false
	}
	return a.IAM.UserARN, a.IAM.CallerID, true
}

// Handler is a Lambda handler serving h. A request without an IAM
// identity is answered 401 without reaching h: API Gateway authorizes
// every route with IAM and never passes one, so this is defence in depth
// (a route added without authorization, a direct invocation). An event
// that cannot be a request (no method, a body that is not base64 when
// it says it is) is answered 400.
func Handler(h http.Handler, principal Principal) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if _, _, ok := IAM(ev); !ok {
			return problem(http.StatusUnauthorized, "the request carries no IAM identity; sign it with SigV4 (service execute-api)"), nil
		}
		if principal != nil {
			ctx = principal(ctx, ev)
		}
		r, err := request(ctx, ev)
		if err != nil {
			return problem(http.StatusBadRequest, err.Error()), nil
		}
		w := &recorder{header: http.Header{}}
		h.ServeHTTP(w, r)
		return w.response(), nil
	}
}

// request builds the *http.Request of the event: rawPath and
// rawQueryString as sent (percent-encoding kept), the headers (API
// Gateway joins repeated ones with commas, which HTTP allows for every
// header but Set-Cookie, a response header), the cookies as one Cookie
// header, the body decoded from base64 when API Gateway encoded it.
func request(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		return nil, fmt.Errorf("the event has no requestContext.http.method: not an API Gateway HTTP API event (payload format 2.0)")
	}
	target := ev.RawPath
	if target == "" {
		target = "/"
	}
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, fmt.Errorf("rawPath and rawQueryString: %w", err)
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return nil, fmt.Errorf("body: isBase64Encoded is true, but it is not base64: %w", err)
		}
	}
	r, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("requestContext.http.method: %w", err)
	}
	r.RequestURI = target
	for k, v := range ev.Headers {
		r.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	r.Host = r.Header.Get("Host")
	if r.Host == "" {
		r.Host = ev.RequestContext.DomainName
	}
	if ip := ev.RequestContext.HTTP.SourceIP; ip != "" {
		r.RemoteAddr = net.JoinHostPort(ip, "0")
	}
	return r, nil
}

// recorder is the http.ResponseWriter the handler writes to.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// response is what the handler wrote: headers joined with commas as API
// Gateway wants them, Set-Cookie as cookies, a body that is not text
// base64-encoded.
func (w *recorder) response() events.APIGatewayV2HTTPResponse {
	res := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: map[string]string{}}
	if res.StatusCode == 0 {
		res.StatusCode = http.StatusOK
	}
	for k, vs := range w.header {
		if k == "Set-Cookie" {
			res.Cookies = append(res.Cookies, vs...)
			continue
		}
		res.Headers[k] = strings.Join(vs, ", ")
	}
	if b := w.body.Bytes(); len(b) == 0 || textual(w.header.Get("Content-Type")) && utf8.Valid(b) {
		res.Body = string(b)
	} else {
		res.Body, res.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return res
}

// textual reports whether a body of the content type is text (text/*,
// JSON, XML, form data, JavaScript), sent as it is; other bodies (images,
// octet streams, none declared) go base64-encoded.
func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml") || mt == "application/javascript" ||
		mt == "application/x-www-form-urlencoded"
}

// problem is an RFC 9457 problem answer of the adapter's own.
func problem(status int, detail string) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail})
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status, Headers: map[string]string{"Content-Type": "application/problem+json"}, Body: string(b),
	}
}
