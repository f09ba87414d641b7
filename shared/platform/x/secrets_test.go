package x

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"oncepost/shared/platform"
)

// TestNoSecretInErrors drives every call against a server that echoes
// the request (Authorization header, form, query) into its error answer,
// in X's problem fields and in OAuth's, for each error status. No
// returned error may carry a token, the client secret, an authorization
// code, a PKCE verifier or the Basic credential. (TestMain additionally
// checks every error any test produced.)
func TestNoSecretInErrors(t *testing.T) {
	const code, verifier = "auth-code-3c3c", "verifier-4d4d"
	secrets := append(slices.Clone(secretValues),
		base64.StdEncoding.EncodeToString([]byte("client-id:"+testClientSecret)))
	for _, status := range []int{400, 401, 403, 404, 429, 500, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			// X's error bodies (https://docs.x.com/x-api/fundamentals/response-codes-and-errors:
			// title, detail, type, errors) and OAuth's (error,
			// error_description), every field echoing the request.
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				echo := fmt.Sprintf("auth=%s body=%s query=%s", r.Header.Get("Authorization"), body, r.URL.RawQuery)
				if status == 403 {
					echo = "You are not allowed to create a Tweet with duplicate content. " + echo
				}
				writeJSON(w, status, map[string]any{
					"title": "Echo " + echo, "detail": echo, "type": "about:blank",
					"errors": []map[string]any{{"message": echo}},
					"error":  "invalid_request " + echo, "error_description": echo,
				})
			}))
			c := newClient(t, srv.URL)
			ctx := context.Background()
			var errs []error
			_, err := c.Publish(ctx, platform.PublishRequest{Text: "hello"})
			errs = append(errs, err)
			errs = append(errs, c.Delete(ctx, "1445880548472328192"))
			_, err = c.Exists(ctx, "1445880548472328192")
			errs = append(errs, err)
			_, _, err = c.Lookup(ctx, platform.LookupQuery{Fingerprint: "f", After: "1445880548472328192"})
			errs = append(errs, err)
			_, err = c.Recent(ctx, 5)
			errs = append(errs, err)
			_, err = c.UploadMedia(ctx, platform.MediaUpload{ContentType: "image/png", Data: []byte("png")})
			errs = append(errs, err)
			_, err = c.Refresh(ctx, platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh})
			errs = append(errs, err)
			_, err = ExchangeCode(ctx, nil, OAuthConfig{ClientID: "client-id", ClientSecret: testClientSecret,
				RedirectURL: "https://r.example/cb", TokenURL: srv.URL + "/2/oauth2/token"}, code, verifier)
			errs = append(errs, err)
			for i, err := range errs {
				if status == 404 && (i == 1 || i == 2) {
					continue // a 404 is an answer for Delete and Exists, not an error
				}
				if err == nil {
					t.Errorf("call %d: no error for status %d", i, status)
					continue
				}
				outcomeOf(t, err) // records it for TestMain's check
				for _, s := range secrets {
					if strings.Contains(err.Error(), s) || strings.Contains(err.Error(), url.QueryEscape(s)) {
						t.Errorf("call %d: error %q carries the secret %q", i, err, s)
					}
				}
			}
		})
	}
}
