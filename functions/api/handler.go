package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"oncepost/shared/apigw"
	"oncepost/shared/awsruntime"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// build is the function's handler: the API behind the API Gateway
// adapter, the caller's IAM identity in each request's context.
func build(rt *awsruntime.Runtime) (any, error) {
	desk, err := rt.Desk(callTimeout)
	if err != nil {
		return nil, err
	}
	api := &interimAPI{desk: desk}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/posts", api.createPost)
	mux.HandleFunc("GET /v1/posts/{id}", api.getPost)
	return apigw.Handler(mux, caller), nil
}

// callTimeout bounds one platform call the use cases make (none of the
// API's calls reaches a platform on AWS but an approved delete's).
const callTimeout = 10 * time.Second

type callerKey struct{}

// caller puts the IAM identity API Gateway verified into the request's
// context: its callerScope, which scopes idempotency keys.
func caller(ctx context.Context, ev events.APIGatewayV2HTTPRequest) context.Context {
	arn, id, _ := apigw.IAM(ev)
	return context.WithValue(ctx, callerKey{}, callerScope(arn, id))
}

// callerScope names an IAM caller for its idempotency keys: its ARN, but
// an assumed role's without the session name
// (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION → …/ROLE). A session
// name changes whenever a client's credentials are renewed (the SDKs name
// sessions by the time), and a retry under new credentials must still
// find its key; the sessions of one role are one principal to IAM
// anyway. Without an ARN, the caller id.
func callerScope(arn, callerID string) string {
	if rest, ok := strings.CutPrefix(arn, "arn:"); ok {
		parts := strings.SplitN(rest, ":", 5) // partition, service, region, account, resource
		if len(parts) == 5 && parts[1] == "sts" && strings.HasPrefix(parts[4], "assumed-role/") {
			if role, _, ok := strings.Cut(strings.TrimPrefix(parts[4], "assumed-role/"), "/"); ok {
				return "arn:" + strings.Join(parts[:4], ":") + ":assumed-role/" + role
			}
		}
	}
	return cmp.Or(arn, callerID)
}

// interimAPI is POST /v1/posts and GET /v1/posts/{id} only, over
// publishing.Desk, until shared/httpapi is wired here: enough to run the
// function end to end (API Gateway event → Desk → store → answer) under
// the RIE.
type interimAPI struct {
	desk *publishing.Desk
}

func (a *interimAPI) createPost(w http.ResponseWriter, r *http.Request) {
	key := strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
	if key == "" {
		problem(w, http.StatusBadRequest, "Idempotency-Key: is missing")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		problem(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	var d post.Draft
	if err := json.Unmarshal(raw, &d); err != nil {
		problem(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	sum := sha256.Sum256([]byte(r.Method + "\n" + r.URL.Path + "\n" + string(raw)))
	scope, _ := r.Context().Value(callerKey{}).(string)
	req := &publishing.KeyedRequest{Scope: scope, Key: key, Fingerprint: hex.EncodeToString(sum[:]),
		Encode: func(p post.Post) (int, []byte, error) {
			b, err := json.Marshal(p)
			return http.StatusCreated, b, err
		}}
	res, err := a.desk.Schedule(r.Context(), d, nil, req)
	switch {
	case errors.Is(err, publishing.ErrKeyReused):
		problem(w, http.StatusUnprocessableEntity, "Idempotency-Key was used with another request")
	case errors.Is(err, publishing.ErrKeyInFlight):
		problem(w, http.StatusConflict, "a request with this Idempotency-Key is being processed")
	case len(publishing.FieldErrors(err)) > 0:
		problem(w, http.StatusUnprocessableEntity, err.Error())
	case err != nil:
		problem(w, http.StatusInternalServerError, "the server failed")
	default:
		if res.Replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.Status)
		w.Write(res.Body)
	}
}

func (a *interimAPI) getPost(w http.ResponseWriter, r *http.Request) {
	v, err := a.desk.Show(r.Context(), post.ID(r.PathValue("id")))
	switch {
	case errors.Is(err, post.ErrNotFound):
		problem(w, http.StatusNotFound, "no such post")
	case err != nil:
		problem(w, http.StatusInternalServerError, "the server failed")
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail})
}
