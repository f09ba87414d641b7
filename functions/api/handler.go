package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	scheduler, err := rt.PostScheduler()
	if err != nil {
		return nil, err
	}
	api := &interimAPI{scheduler: scheduler, store: rt.Store, accounts: rt.Accounts, now: rt.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/posts", api.createPost)
	mux.HandleFunc("GET /v1/posts/{id}", api.getPost)
	return apigw.Handler(mux, caller), nil
}

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

// interimAPI is POST /v1/posts and GET /v1/posts/{id} only, until
// shared/httpapi and publishing.Desk are wired here: enough to run the
// function end to end (API Gateway event → store → answer) under the RIE.
type interimAPI struct {
	scheduler publishing.PostScheduler
	store     publishing.Posts
	accounts  publishing.Accounts
	now       func() time.Time
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
	now := a.now()
	if d.ID == "" {
		d.ID = fmt.Sprintf("p-%s-%s", now.UTC().Format("20060102-150405"), strings.ToLower(rand.Text()[:4]))
	}
	accounts, err := a.accounts.ListAccounts(r.Context())
	if err != nil {
		problem(w, http.StatusInternalServerError, "the server failed")
		return
	}
	rules := post.Rules{Accounts: map[post.AccountID]post.Account{}, Now: now,
		Limits: func(string) (post.Limits, bool) { return post.Limits{MaxTextGraphemes: 500}, true }}
	for _, acc := range accounts {
		rules.Accounts[acc.ID] = acc
	}
	p, err := d.Validate(rules)
	if err != nil {
		problem(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	body, _ := json.Marshal(p)
	sum := sha256.Sum256([]byte(r.Method + "\n" + r.URL.Path + "\n" + string(raw)))
	scope, _ := r.Context().Value(callerKey{}).(string)
	rec := &publishing.IdempotencyRecord{Scope: scope, Key: key, Fingerprint: hex.EncodeToString(sum[:]), Post: p.ID, Status: http.StatusCreated, Response: body}
	err = a.scheduler.CreatePost(r.Context(), p, rec)
	var exists *publishing.KeyExistsError
	switch {
	case errors.As(err, &exists) && exists.Record.Fingerprint != rec.Fingerprint:
		problem(w, http.StatusUnprocessableEntity, "Idempotency-Key was used with another request")
	case errors.As(err, &exists) && exists.InFlight:
		problem(w, http.StatusConflict, "a request with this Idempotency-Key is being processed")
	case errors.As(err, &exists):
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(exists.Record.Status)
		w.Write(exists.Record.Response)
	case errors.Is(err, post.ErrConflict):
		problem(w, http.StatusConflict, "id: post exists already")
	case err != nil:
		problem(w, http.StatusInternalServerError, "the server failed")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	}
}

func (a *interimAPI) getPost(w http.ResponseWriter, r *http.Request) {
	p, err := a.store.GetPost(r.Context(), post.ID(r.PathValue("id")))
	switch {
	case errors.Is(err, post.ErrNotFound):
		problem(w, http.StatusNotFound, "no such post")
	case err != nil:
		problem(w, http.StatusInternalServerError, "the server failed")
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p)
	}
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail})
}
