// Package apitest checks HTTP exchanges against the API's OpenAPI
// document, for tests: a request the document refuses must have been
// refused (4xx), and every answer must be one the document declares for
// its operation (status, headers, body), a path or method it lacks
// answered with a 404 or 405 problem. It wraps kin-openapi's
// openapi3filter (IncludeResponseStatus on) and gorillamux router.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

var registerOnce sync.Once

// Load parses and validates an OpenAPI 3.1 document.
func Load(document []byte) (*openapi3.T, error) {
	registerOnce.Do(func() {
		for _, t := range []string{"image/png", "image/jpeg", "image/gif", "image/webp"} {
			openapi3filter.RegisterBodyDecoder(t, openapi3filter.FileBodyDecoder)
		}
	})
	doc, err := openapi3.NewLoader().LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("load the document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("the document is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.IsOpenAPI31OrLater()); err != nil {
		return nil, fmt.Errorf("not a valid OpenAPI 3.1 document: %w", err)
	}
	return doc, nil
}

// Checker checks exchanges with a server at one base URL.
type Checker struct {
	router routers.Router
}

// NewChecker is a Checker for the server at baseURL (e.g.
// http://127.0.0.1:41234): the document's servers are replaced by it.
func NewChecker(document []byte, baseURL string) (*Checker, error) {
	doc, err := Load(document)
	if err != nil {
		return nil, err
	}
	doc.Servers = openapi3.Servers{{URL: baseURL}}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &Checker{router: r}, nil
}

// Exchange is one request and its answer.
type Exchange struct {
	Method, URL   string
	RequestHeader http.Header
	RequestBody   []byte
	Status        int
	Header        http.Header
	Body          []byte
}

// Check returns what in the exchange breaks the document, nil if
// nothing.
func (c *Checker) Check(x Exchange) error {
	ctx := context.Background()
	req, err := http.NewRequest(x.Method, x.URL, bytes.NewReader(x.RequestBody))
	if err != nil {
		return err
	}
	req.Header = x.RequestHeader.Clone()
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if x.Status != http.StatusNotFound && x.Status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s is no operation of the document (%v) but was answered %d", x.Method, x.URL, err, x.Status)
		}
		return checkProblem(x)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && (x.Status < 400 || x.Status >= 500) {
		return fmt.Errorf("%s %s: the document refuses the request (%v) but it was answered %d: %s", x.Method, x.URL, err, x.Status, x.Body)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.Status, Header: x.Header, Options: opts}
	out.SetBodyBytes(x.Body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%s %s: answer %d does not match the document: %v\n%s", x.Method, x.URL, x.Status, err, x.Body)
	}
	return nil
}

// checkProblem checks the answer of a path the document lacks: a
// problem+json whose status is the HTTP status.
func checkProblem(x Exchange) error {
	if ct := x.Header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("%s %s: %d with Content-Type %q, want application/problem+json", x.Method, x.URL, x.Status, ct)
	}
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(x.Body, &p); err != nil || p.Type == "" || p.Title == "" || p.Status != x.Status {
		return fmt.Errorf("%s %s: %d is not a problem of that status (%v): %s", x.Method, x.URL, x.Status, err, x.Body)
	}
	return nil
}

// Client sends requests and checks every exchange; a broken one is
// reported through Errorf (a testing.T).
type Client struct {
	HTTP    *http.Client
	Checker *Checker
	Errorf  func(format string, args ...any)
}

// Do sends req (its body given as bytes, so that it can be checked) and
// returns the answer read whole; a transport error is returned as is.
func (c *Client) Do(req *http.Request, body []byte) (*http.Response, []byte, error) {
	req.Body = http.NoBody
	if body != nil {
		req.Body = readCloser{bytes.NewReader(body)}
		req.ContentLength = int64(len(body))
		req.GetBody = nil
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return resp, nil, err
	}
	if err := c.Checker.Check(Exchange{Method: req.Method, URL: req.URL.String(), RequestHeader: req.Header, RequestBody: body,
		Status: resp.StatusCode, Header: resp.Header, Body: buf.Bytes()}); err != nil {
		c.Errorf("%v", err)
	}
	return resp, buf.Bytes(), nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
