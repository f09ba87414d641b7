package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/apitoken"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// createHook is POST /v1/webhooks with body, as the token.
func (h *harness) createHook(tok, body string) answer {
	h.t.Helper()
	return h.do(request{method: "POST", path: "/v1/webhooks", body: []byte(body), token: tok})
}

// subscriptionIDs lists the store's subscriptions' ids.
func (h *harness) subscriptionIDs() []string {
	h.t.Helper()
	subs, err := h.store.ListSubscriptions(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	var ids []string
	for _, s := range subs {
		ids = append(ids, s.ID)
	}
	return ids
}

// POST /v1/webhooks answers the subscription with its secret, which the
// store keeps; no other answer shows the secret.
func TestWebhookSecretShownOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	op, reader := h.token("operate"), h.token("read")
	a := h.createHook(op, `{"url": "https://cms.example.com/hooks/oncepost", "events": ["post.published", "post.failed", "post.published"], "description": "the CMS"}`)
	var created struct {
		subscriptionView
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(a.body, &created); a.status != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if loc := a.header.Get("Location"); loc != "/v1/webhooks/"+created.ID {
		t.Errorf("Location %q, want /v1/webhooks/%s", loc, created.ID)
	}
	want := subscriptionView{ID: created.ID, URL: "https://cms.example.com/hooks/oncepost", Events: []publishing.EventType{publishing.EventPublished, publishing.EventFailed},
		Description: "the CMS", CreatedAt: created.CreatedAt}
	if diff := cmp.Diff(want, created.subscriptionView); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	stored, err := h.store.GetSubscription(context.Background(), created.ID)
	if err != nil || !strings.HasPrefix(created.Secret, "whsec_") || stored.Secret != created.Secret {
		t.Fatalf("stored %+v (%v); want the secret answered, whsec_…", stored, err)
	}
	for _, path := range []string{"/v1/webhooks", "/v1/webhooks/" + created.ID} {
		a := h.do(request{method: "GET", path: path, token: reader})
		if a.status != http.StatusOK || strings.Contains(string(a.body), created.Secret) || strings.Contains(string(a.body), "whsec_") || strings.Contains(string(a.body), `"secret"`) {
			t.Errorf("GET %s: %d %s; want 200 without the secret", path, a.status, a.body)
		}
	}
	var list struct {
		Webhooks []subscriptionView `json:"webhooks"`
	}
	if a := h.do(request{method: "GET", path: "/v1/webhooks", token: reader}); json.Unmarshal(a.body, &list) != nil || len(list.Webhooks) != 1 || !cmp.Equal(list.Webhooks[0], want) {
		t.Errorf("list: %s, want the one subscription %+v", a.body, want)
	}
	if strings.Contains(h.logs.String(), created.Secret) {
		t.Error("the secret is in the access log")
	}
}

// A receiver URL or an event type the rules refuse is 422 naming the
// field, and nothing is stored; private addresses pass when allowed.
func TestWebhookCreateRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	op := h.token("operate")
	tests := []struct {
		name, body string
		status     int
		// field is the field the problem names first.
		field string
	}{
		{"cloud metadata", `{"url": "https://169.254.169.254/latest/meta-data/"}`, http.StatusUnprocessableEntity, "url"},
		{"private address", `{"url": "https://10.0.0.1/hooks"}`, http.StatusUnprocessableEntity, "url"},
		{"mapped private address", `{"url": "https://[::ffff:10.0.0.1]/hooks"}`, http.StatusUnprocessableEntity, "url"},
		{"localhost", `{"url": "https://localhost/hooks"}`, http.StatusUnprocessableEntity, "url"},
		{"http off loopback", `{"url": "http://cms.example.com/hooks"}`, http.StatusUnprocessableEntity, "url"},
		{"no url", `{"events": ["post.failed"]}`, http.StatusUnprocessableEntity, "url"},
		{"unknown event type", `{"url": "https://cms.example.com/hooks", "events": ["post.published", "post.exploded"]}`, http.StatusUnprocessableEntity, "events[1]"},
		{"description too long", `{"url": "https://cms.example.com/hooks", "description": "` + strings.Repeat("é", 251) + `"}`, http.StatusUnprocessableEntity, "description"},
		{"unknown member", `{"url": "https://cms.example.com/hooks", "secret": "whsec_mine"}`, http.StatusBadRequest, "secret"},
		{"events not a list", `{"url": "https://cms.example.com/hooks", "events": "post.failed"}`, http.StatusBadRequest, "events"},
	}
	for _, tt := range tests {
		a := h.createHook(op, tt.body)
		p := a.problem(t)
		if a.status != tt.status || len(p.Errors) == 0 || p.Errors[0].Field != tt.field {
			t.Errorf("%s: %d %+v, want %d naming %s", tt.name, a.status, p, tt.status, tt.field)
		}
	}
	if ids := h.subscriptionIDs(); len(ids) != 0 {
		t.Fatalf("refused creates stored %v", ids)
	}
	if a := h.createHook(op, `{"url": "https://10.0.0.1/hooks", "allow_private": true}`); a.status != http.StatusCreated {
		t.Errorf("a private address, allowed: %d %s, want 201", a.status, a.body)
	}
}

// A caller without the operate scope cannot make or remove a
// subscription, nor redrive a delivery, and nothing changes; without a
// token, 401.
func TestWebhookScopes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	op, reader, poster := h.token("operate"), h.token("read"), h.token("posts")
	a := h.createHook(op, `{"url": "https://cms.example.com/hooks"}`)
	var sub subscriptionView
	if err := json.Unmarshal(a.body, &sub); a.status != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	tests := []struct {
		token, method, path, body string
		scope                     Scope
	}{
		{reader, "POST", "/v1/webhooks", `{"url": "https://other.example.com/hooks"}`, apitoken.ScopeOperate},
		{poster, "POST", "/v1/webhooks", `{"url": "https://other.example.com/hooks"}`, apitoken.ScopeOperate},
		{reader, "DELETE", "/v1/webhooks/" + sub.ID, "", apitoken.ScopeOperate},
		{reader, "POST", "/v1/webhooks/" + sub.ID + "/deliveries/evt_x/redrive", "", apitoken.ScopeOperate},
		{poster, "GET", "/v1/webhooks", "", apitoken.ScopeRead},
		{poster, "GET", "/v1/webhooks/" + sub.ID + "/deliveries", "", apitoken.ScopeRead},
	}
	for _, tt := range tests {
		rq := request{method: tt.method, path: tt.path, token: tt.token}
		if tt.body != "" {
			rq.body = []byte(tt.body)
		}
		a := h.do(rq)
		if p := a.problem(t); a.status != http.StatusForbidden || p.Scope != string(tt.scope) {
			t.Errorf("%s %s: %d %+v, want 403 naming %s", tt.method, tt.path, a.status, p, tt.scope)
		}
	}
	if a := h.do(request{method: "POST", path: "/v1/webhooks", body: []byte(`{"url": "https://other.example.com/hooks"}`)}); a.status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", a.status)
	}
	if ids := h.subscriptionIDs(); !cmp.Equal(ids, []string{sub.ID}) {
		t.Errorf("after the refusals: subscriptions %v, want only %s", ids, sub.ID)
	}
}

// DELETE removes a subscription: 204, then it is gone (404 to GET and
// DELETE).
func TestWebhookDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	op := h.token("operate,read")
	var keep, drop subscriptionView
	for _, sv := range []*subscriptionView{&keep, &drop} {
		a := h.createHook(op, `{"url": "https://cms.example.com/hooks"}`)
		if err := json.Unmarshal(a.body, sv); a.status != http.StatusCreated || err != nil {
			t.Fatalf("create: %d %s", a.status, a.body)
		}
	}
	if a := h.do(request{method: "DELETE", path: "/v1/webhooks/" + drop.ID, token: op}); a.status != http.StatusNoContent || len(a.body) != 0 {
		t.Fatalf("delete: %d %s, want 204", a.status, a.body)
	}
	for _, rq := range []request{
		{method: "GET", path: "/v1/webhooks/" + drop.ID, token: op},
		{method: "DELETE", path: "/v1/webhooks/" + drop.ID, token: op},
		{method: "GET", path: "/v1/webhooks/" + drop.ID + "/deliveries", token: op},
	} {
		a := h.do(rq)
		if p := a.problem(t); a.status != http.StatusNotFound || !strings.Contains(p.Detail, drop.ID) {
			t.Errorf("%s %s after delete: %d %+v, want 404 naming it", rq.method, rq.path, a.status, p)
		}
	}
	if ids := h.subscriptionIDs(); !cmp.Equal(ids, []string{keep.ID}) {
		t.Errorf("subscriptions %v, want only %s", ids, keep.ID)
	}
}

// A target's move to published, recorded by the store, is a delivery to
// each subscription that wants it: a subscription's listing shows its
// own only, filters by state, and a dead one is redriven (204), pending
// again; a delivery that is not dead is 409, an unknown one 404.
func TestWebhookDeliveriesAndRedrive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	tok := h.token("operate,read,posts")
	ids := map[string]string{}
	for _, name := range []string{"cms", "chat", "failures"} {
		events := `[]`
		if name == "failures" {
			events = `["post.failed"]`
		}
		a := h.createHook(tok, `{"url": "https://`+name+`.example.com/hooks", "events": `+events+`}`)
		var sv subscriptionView
		if err := json.Unmarshal(a.body, &sv); a.status != http.StatusCreated || err != nil {
			t.Fatalf("create %s: %d %s", name, a.status, a.body)
		}
		ids[name] = sv.ID
	}
	if a := h.do(request{method: "POST", path: "/v1/posts", body: draftJSON("launch", "We launched.", time.Hour), token: tok, header: map[string]string{"Idempotency-Key": "d1"}}); a.status != http.StatusCreated {
		t.Fatalf("create post: %d %s", a.status, a.body)
	}
	if _, err := h.store.UpdateTarget(ctx, "launch", "news", post.TargetUpdate{Status: post.Published, RemoteID: "1135", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	list := func(sub, query string) (answer, []deliveryView) {
		t.Helper()
		a := h.do(request{method: "GET", path: "/v1/webhooks/" + sub + "/deliveries" + query, token: tok})
		var out struct {
			Deliveries []deliveryView `json:"deliveries"`
		}
		if a.status == http.StatusOK {
			if err := json.Unmarshal(a.body, &out); err != nil {
				t.Fatal(err)
			}
		}
		return a, out.Deliveries
	}
	var eventID string
	for _, name := range []string{"cms", "chat"} {
		a, ds := list(ids[name], "")
		if a.status != http.StatusOK || len(ds) != 1 || ds[0].Subscription != ids[name] || ds[0].State != publishing.DeliveryPending ||
			ds[0].Event.Type != publishing.EventPublished || ds[0].Event.Post != "launch" || ds[0].Event.RemoteID != "1135" || ds[0].ID != publishing.DeliveryID(ds[0].Event.ID, ids[name]) {
			t.Fatalf("%s's deliveries: %d %s; want its one pending post.published delivery", name, a.status, a.body)
		}
		eventID = ds[0].Event.ID
	}
	if a, ds := list(ids["failures"], ""); a.status != http.StatusOK || len(ds) != 0 {
		t.Errorf("deliveries of a subscription to post.failed only: %d %s, want none", a.status, a.body)
	}
	if a, ds := list(ids["cms"], "?state=dead&limit=5"); a.status != http.StatusOK || len(ds) != 0 {
		t.Errorf("dead deliveries: %d %s, want none yet", a.status, a.body)
	}
	for _, query := range []string{"?state=lost", "?limit=0", "?limit=501", "?after=x"} {
		a, _ := list(ids["cms"], query)
		if p := a.problem(t); a.status != http.StatusBadRequest || len(p.Errors) != 1 {
			t.Errorf("deliveries%s: %d %+v, want 400 naming the parameter", query, a.status, p)
		}
	}
	redrive := func(sub, event string) answer {
		return h.do(request{method: "POST", path: "/v1/webhooks/" + sub + "/deliveries/" + event + "/redrive", token: tok})
	}
	if a := redrive(ids["cms"], eventID); a.status != http.StatusConflict || a.problem(t).Type != typeConflict {
		t.Errorf("redrive of a pending delivery: %d %s, want 409", a.status, a.body)
	}
	_, ds := list(ids["cms"], "")
	dead := publishing.Delivery{ID: ds[0].ID, State: publishing.DeliveryDead, Attempts: 13, LastError: "status 503", LastStatus: 503, UpdatedAt: time.Now()}
	if err := h.store.RecordDelivery(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if _, ds := list(ids["cms"], "?state=dead"); len(ds) != 1 || ds[0].Attempts != 13 || ds[0].LastStatus != 503 || !ds[0].NextTry.IsZero() {
		t.Fatalf("dead deliveries: %+v, want the one given up, without a next try", ds)
	}
	if a := redrive(ids["cms"], eventID); a.status != http.StatusNoContent {
		t.Fatalf("redrive: %d %s, want 204", a.status, a.body)
	}
	if _, ds := list(ids["cms"], "?state=pending"); len(ds) != 1 || ds[0].Attempts != 0 || ds[0].ID != dead.ID {
		t.Errorf("after the redrive: %+v, want the delivery pending, no attempts", ds)
	}
	for _, tt := range []struct{ sub, event string }{
		{ids["cms"], "evt_unknown"},
		{ids["failures"], eventID}, // the event, but not to this subscription
		{"wh_nothing", eventID},
	} {
		if a := redrive(tt.sub, tt.event); a.status != http.StatusNotFound {
			t.Errorf("redrive %s of %s: %d %s, want 404", tt.event, tt.sub, a.status, a.body)
		}
	}
	if a, _ := list("wh_nothing", ""); a.status != http.StatusNotFound {
		t.Errorf("deliveries of an unknown subscription: %d, want 404", a.status)
	}
}

// deadOnly is a runtime's webhooks that keep only dead deliveries where
// they can be listed (AWS: shared/awswebhooks).
type deadOnly struct{ Webhooks }

func (d deadOnly) ListDeliveries(ctx context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error) {
	if state != "" && state != publishing.DeliveryDead {
		return nil, fmt.Errorf("%s: %w", state, publishing.ErrDeliveryStateNotKept)
	}
	return d.Webhooks.ListDeliveries(ctx, state, limit)
}

// A state the runtime does not keep is the caller's 400 naming state,
// not a 500; the states it keeps list.
func TestWebhookDeliveryStateNotKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{webhooks: func(w Webhooks) Webhooks { return deadOnly{w} }})
	tok := h.token("all")
	created := h.do(request{method: "POST", path: "/v1/webhooks", token: tok, body: []byte(`{"url": "https://cms.example.com/hooks"}`)})
	var sub struct{ ID string }
	if err := json.Unmarshal(created.body, &sub); created.status != http.StatusCreated || err != nil {
		t.Fatalf("POST /v1/webhooks: %d %s", created.status, created.body)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{{"?state=pending", http.StatusBadRequest}, {"?state=delivered", http.StatusBadRequest}, {"?state=dead", http.StatusOK}, {"", http.StatusOK}} {
		a := h.do(request{method: "GET", path: "/v1/webhooks/" + sub.ID + "/deliveries" + tc.query, token: tok})
		if a.status != tc.want {
			t.Errorf("deliveries%s: %d %s, want %d", tc.query, a.status, a.body, tc.want)
			continue
		}
		if tc.want != http.StatusBadRequest {
			continue
		}
		if p := a.problem(t); len(p.Errors) != 1 || p.Errors[0].Field != "state" {
			t.Errorf("deliveries%s: %+v, want a problem naming state", tc.query, p)
		}
	}
}

// Without Config.Webhooks the routes are there and answer 501.
func TestWebhooksNotOnThisRuntime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{noWebhooks: true})
	tok := h.token("all")
	for _, rq := range []request{
		{method: "GET", path: "/v1/webhooks"},
		{method: "POST", path: "/v1/webhooks", body: []byte(`{"url": "https://cms.example.com/hooks"}`)},
		{method: "GET", path: "/v1/webhooks/wh_x"},
		{method: "DELETE", path: "/v1/webhooks/wh_x"},
		{method: "GET", path: "/v1/webhooks/wh_x/deliveries"},
		{method: "POST", path: "/v1/webhooks/wh_x/deliveries/evt_x/redrive"},
	} {
		rq.token = tok
		if a := h.do(rq); a.status != http.StatusNotImplemented || a.problem(t).Status != http.StatusNotImplemented {
			t.Errorf("%s %s: %d %s, want 501", rq.method, rq.path, a.status, a.body)
		}
	}
}
