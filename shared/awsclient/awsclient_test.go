package awsclient

import (
	"io"
	"net/http"
	"strings"
	"testing"

	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// doFunc is an aws.HTTPClient made of a function.
type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// The SDK closes a request body once the answer is in, while net/http may
// still read it: smithy-go's body then reads io.EOF as an error, which
// net/http takes for a failed write (see Wrap). This test shows
// the SDK's behaviour (it fails once smithy-go fixes it: bufferedBodies
// may then go) and that Wrap shields net/http from it.
func TestWrapOutliveTheSDKsClose(t *testing.T) {
	sdkRequest := func() *http.Request {
		r, err := smithyhttp.NewStackRequest().(*smithyhttp.Request).SetStream(strings.NewReader(`{"QueueUrl":"q"}`))
		if err != nil {
			t.Fatal(err)
		}
		r.ContentLength = 16
		r.URL.Scheme, r.URL.Host = "http", "127.0.0.1:1"
		return r.Build(t.Context())
	}
	// late reads what net/http reads after the answer: the SDK has closed
	// the body it built (orig) by then.
	late := func(orig io.Closer, sent io.Reader) error {
		orig.Close()
		_, err := io.Copy(io.Discard, sent)
		return err
	}

	req := sdkRequest()
	if err := late(req.Body, req.Body); err == nil {
		t.Errorf("reading the SDK's request body after its close succeeded: smithy-go no longer returns io.EOF there, and Wrap can go")
	}

	req = sdkRequest()
	var lateErr error
	rt := Wrap(doFunc(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"QueueUrl":"q"}` || r.ContentLength != 16 {
			t.Errorf("sent body %q, length %d; want the SDK's 16 bytes", body, r.ContentLength)
		}
		lateErr = late(req.Body, r.Body)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	}))
	if _, err := rt.Do(req); err != nil {
		t.Fatal(err)
	}
	if lateErr != nil {
		t.Errorf("net/http's late read of a buffered body = %v, want nil", lateErr)
	}
}
