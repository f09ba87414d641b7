package apigw

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
)

// seen is what the handler was given.
type seen struct {
	Method, Path, EscapedPath, RawQuery, Host, RemoteAddr string
	Header                                                map[string]string
	Body                                                  string
	Caller                                                string
}

type callerKey struct{}

// event is a signed request as API Gateway sends it.
func event(method, rawPath, rawQuery string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "ANY /v1/{proxy+}", RawPath: rawPath, RawQueryString: rawQuery,
		Headers: map[string]string{"host": "abc123.execute-api.eu-west-1.amazonaws.com"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "abc123.execute-api.eu-west-1.amazonaws.com", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath, SourceIP: "203.0.113.7"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
				UserARN: "arn:aws:iam::123456789012:user/cms", CallerID: "AIDAEXAMPLE", AccountID: "123456789012",
			}},
		},
	}
}

func TestHandler(t *testing.T) {
	tests := []struct {
		name     string
		event    func() events.APIGatewayV2HTTPRequest
		respond  func(w http.ResponseWriter)
		wantSeen *seen // nil: the handler must not be called
		want     events.APIGatewayV2HTTPResponse
	}{
		{
			name: "GET with a query, repeated headers and cookies",
			event: func() events.APIGatewayV2HTTPRequest {
				ev := event("GET", "/v1/posts/a%2Fb", "status=failed&status=held&after=x%3D")
				ev.Headers["accept"] = "application/json, text/plain"
				ev.Headers["x-trace"] = "1,2"
				ev.Cookies = []string{"a=1", "b=2"}
				return ev
			},
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Add("Vary", "Accept")
				w.Header().Add("Vary", "Idempotency-Key")
				w.Header().Add("Set-Cookie", "s=1")
				w.Header().Add("Set-Cookie", "t=2")
				io.WriteString(w, `{"id":"a/b"}`)
			},
			wantSeen: &seen{
				Method: "GET", Path: "/v1/posts/a/b", EscapedPath: "/v1/posts/a%2Fb", RawQuery: "status=failed&status=held&after=x%3D",
				Host: "abc123.execute-api.eu-west-1.amazonaws.com", RemoteAddr: "203.0.113.7:0",
				Header: map[string]string{"Accept": "application/json, text/plain", "X-Trace": "1,2", "Cookie": "a=1; b=2", "Host": "abc123.execute-api.eu-west-1.amazonaws.com"},
				Caller: "arn:aws:iam::123456789012:user/cms",
			},
			want: events.APIGatewayV2HTTPResponse{StatusCode: 200,
				Headers: map[string]string{"Content-Type": "application/json", "Vary": "Accept, Idempotency-Key"},
				Body:    `{"id":"a/b"}`, Cookies: []string{"s=1", "t=2"}},
		},
		{
			name: "POST with a base64 body, answered 201",
			event: func() events.APIGatewayV2HTTPRequest {
				ev := event("POST", "/v1/posts", "")
				ev.Headers["idempotency-key"] = `"k-1"`
				ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(`{"body":"héllo"}`)), true
				return ev
			},
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"ok":true}`)
			},
			wantSeen: &seen{
				Method: "POST", Path: "/v1/posts", EscapedPath: "/v1/posts", Host: "abc123.execute-api.eu-west-1.amazonaws.com", RemoteAddr: "203.0.113.7:0",
				Header: map[string]string{"Idempotency-Key": `"k-1"`, "Host": "abc123.execute-api.eu-west-1.amazonaws.com"},
				Body:   `{"body":"héllo"}`, Caller: "arn:aws:iam::123456789012:user/cms",
			},
			want: events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"ok":true}`},
		},
		{
			name:  "a binary answer goes base64",
			event: func() events.APIGatewayV2HTTPRequest { return event("GET", "/v1/media/x.png", "") },
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "image/png")
				w.Write([]byte{0x89, 'P', 'N', 'G', 0, 0xff})
			},
			wantSeen: &seen{Method: "GET", Path: "/v1/media/x.png", EscapedPath: "/v1/media/x.png", Host: "abc123.execute-api.eu-west-1.amazonaws.com",
				RemoteAddr: "203.0.113.7:0", Header: map[string]string{"Host": "abc123.execute-api.eu-west-1.amazonaws.com"}, Caller: "arn:aws:iam::123456789012:user/cms"},
			want: events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "image/png"},
				Body: base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0, 0xff}), IsBase64Encoded: true},
		},
		{
			name:  "text that is not UTF-8 goes base64 too",
			event: func() events.APIGatewayV2HTTPRequest { return event("GET", "/v1/x", "") },
			respond: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/plain; charset=latin1")
				w.Write([]byte{'c', 0xe9})
			},
			wantSeen: &seen{Method: "GET", Path: "/v1/x", EscapedPath: "/v1/x", Host: "abc123.execute-api.eu-west-1.amazonaws.com",
				RemoteAddr: "203.0.113.7:0", Header: map[string]string{"Host": "abc123.execute-api.eu-west-1.amazonaws.com"}, Caller: "arn:aws:iam::123456789012:user/cms"},
			want: events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "text/plain; charset=latin1"},
				Body: base64.StdEncoding.EncodeToString([]byte{'c', 0xe9}), IsBase64Encoded: true},
		},
		{
			name:    "nothing written: 200, no body",
			event:   func() events.APIGatewayV2HTTPRequest { return event("DELETE", "/v1/x", "") },
			respond: func(w http.ResponseWriter) {},
			wantSeen: &seen{Method: "DELETE", Path: "/v1/x", EscapedPath: "/v1/x", Host: "abc123.execute-api.eu-west-1.amazonaws.com",
				RemoteAddr: "203.0.113.7:0", Header: map[string]string{"Host": "abc123.execute-api.eu-west-1.amazonaws.com"}, Caller: "arn:aws:iam::123456789012:user/cms"},
			want: events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{}},
		},
		{
			name: "no IAM identity: 401, the handler is not called",
			event: func() events.APIGatewayV2HTTPRequest {
				ev := event("POST", "/v1/posts", "")
				ev.RequestContext.Authorizer = nil
				return ev
			},
			want: problem(401, "the request carries no IAM identity; sign it with SigV4 (service execute-api)"),
		},
		{
			name: "an empty IAM identity: 401",
			event: func() events.APIGatewayV2HTTPRequest {
				ev := event("POST", "/v1/posts", "")
				ev.RequestContext.Authorizer.IAM = &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{}
				return ev
			},
			want: problem(401, "the request carries no IAM identity; sign it with SigV4 (service execute-api)"),
		},
		{
			name: "a body that is not base64: 400",
			event: func() events.APIGatewayV2HTTPRequest {
				ev := event("POST", "/v1/posts", "")
				ev.Body, ev.IsBase64Encoded = "not base64!", true
				return ev
			},
			want: problem(400, "body: isBase64Encoded is true, but it is not base64: illegal base64 data at input byte 3"),
		},
		{
			name: "no method (not an HTTP API event): 400",
			event: func() events.APIGatewayV2HTTPRequest {
				ev := event("", "/v1/posts", "")
				return ev
			},
			want: problem(400, "the event has no requestContext.http.method: not an API Gateway HTTP API event (payload format 2.0)"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *seen
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = &seen{Method: r.Method, Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
					Host: r.Host, RemoteAddr: r.RemoteAddr, Header: map[string]string{}, Body: string(b)}
				for k, vs := range r.Header {
					got.Header[k] = strings.Join(vs, "|")
				}
				got.Caller, _ = r.Context().Value(callerKey{}).(string)
				tt.respond(w)
			})
			principal := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) context.Context {
				arn, _, _ := IAM(ev)
				return context.WithValue(ctx, callerKey{}, arn)
			}
			res, err := Handler(h, principal)(context.Background(), tt.event())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantSeen, got); diff != "" {
				t.Errorf("the handler saw (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}
