package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/webhook"
)

// Webhooks is the runtime's webhook subscriptions and their deliveries,
// as the API reaches them (publishing.Subscriptions and
// publishing.Deliveries have these; the embedded store implements both).
type Webhooks interface {
	// AddSubscription stores a subscription (its id and secret made by
	// webhook.NewSubscription); post.ErrConflict if the id exists.
	AddSubscription(ctx context.Context, s publishing.Subscription) error
	// GetSubscription returns post.ErrNotFound for an unknown id.
	GetSubscription(ctx context.Context, id string) (publishing.Subscription, error)
	ListSubscriptions(ctx context.Context) ([]publishing.Subscription, error)
	// RemoveSubscription deletes it and its pending deliveries;
	// post.ErrNotFound for an unknown id.
	RemoveSubscription(ctx context.Context, id string) error
	// ListDeliveries lists deliveries in a state (all when ""), most
	// recently updated first; a limit ≤ 0 means all.
	ListDeliveries(ctx context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error)
	// RedriveDelivery makes a dead delivery pending again, due at now;
	// post.ErrNotFound for an unknown id, post.ErrConflict when it is
	// not dead.
	RedriveDelivery(ctx context.Context, id string, now time.Time) error
}

// subscriptionView is a subscription as the API shows it: never its
// secret.
type subscriptionView struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Events it wants; empty for every type.
	Events         []publishing.EventType `json:"events"`
	AllowPrivate   bool                   `json:"allow_private"`
	Description    string                 `json:"description,omitempty"`
	CreatedAt      time.Time              `json:"created_at"`
	Disabled       bool                   `json:"disabled"`
	DisabledReason string                 `json:"disabled_reason,omitempty"`
}

func viewSubscription(s publishing.Subscription) subscriptionView {
	events := s.Events
	if events == nil {
		events = []publishing.EventType{}
	}
	return subscriptionView{ID: s.ID, URL: s.URL, Events: events, AllowPrivate: s.AllowPrivate, Description: s.Description,
		CreatedAt: s.CreatedAt.UTC(), Disabled: s.Disabled, DisabledReason: s.DisabledReason}
}

// subscriptionCreated is POST /v1/webhooks' answer: the subscription and
// its signing secret, which no other answer shows.
type subscriptionCreated struct {
	subscriptionView
	Secret string `json:"secret"`
}

// deliveryView is one event's delivery to one subscription.
type deliveryView struct {
	ID           string                   `json:"id"`
	Event        publishing.Event         `json:"event"`
	Subscription string                   `json:"subscription_id"`
	State        publishing.DeliveryState `json:"state"`
	Attempts     int                      `json:"attempts"`
	CreatedAt    time.Time                `json:"created_at"`
	// NextTry is when a pending delivery is tried next.
	NextTry    time.Time `json:"next_try,omitzero"`
	LastError  string    `json:"last_error,omitempty"`
	LastStatus int       `json:"last_status,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func viewDelivery(d publishing.Delivery) deliveryView {
	v := deliveryView{ID: d.ID, Event: d.Event, Subscription: d.Subscription, State: d.State, Attempts: d.Attempts,
		CreatedAt: d.CreatedAt.UTC(), LastError: d.LastError, LastStatus: d.LastStatus, UpdatedAt: d.UpdatedAt.UTC()}
	if d.State == publishing.DeliveryPending {
		v.NextTry = d.NextTry.UTC()
	}
	return v
}

// webhooks is the runtime's Webhooks, or the 501 of a runtime without
// them.
func (s *Server) webhooks(r *http.Request) (Webhooks, *Problem) {
	if s.cfg.Webhooks == nil {
		return nil, newProblem(r, http.StatusNotImplemented, typeBlank, "webhooks are not available on this runtime")
	}
	return s.cfg.Webhooks, nil
}

// listWebhooks is GET /v1/webhooks: every subscription, by id.
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	wh, prob := s.webhooks(r)
	if prob != nil {
		return prob
	}
	subs, err := wh.ListSubscriptions(r.Context())
	if err != nil {
		return s.internal(r, err)
	}
	out := struct {
		Webhooks []subscriptionView `json:"webhooks"`
	}{Webhooks: []subscriptionView{}}
	for _, sub := range subs {
		out.Webhooks = append(out.Webhooks, viewSubscription(sub))
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}

// createWebhook is POST /v1/webhooks: webhook.NewSubscription's rules
// (as `oncepost webhook add`), stored, answered with the secret once.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	wh, prob := s.webhooks(r)
	if prob != nil {
		return prob
	}
	var in struct {
		URL          string   `json:"url"`
		Events       []string `json:"events"`
		AllowPrivate bool     `json:"allow_private"`
		Description  string   `json:"description"`
	}
	if prob := decodeJSON(r, &in, false); prob != nil {
		return prob
	}
	sub, err := webhook.NewSubscription(webhook.SubscriptionRequest{URL: in.URL, Events: in.Events, AllowPrivate: in.AllowPrivate,
		Description: in.Description}, s.cfg.Now())
	if fields := fieldErrors(err); len(fields) > 0 {
		prob := newProblem(r, http.StatusUnprocessableEntity, typeValidation, fields[0].Field+": "+fields[0].Problem)
		prob.Errors = fields
		return prob
	}
	if err != nil {
		return s.internal(r, err)
	}
	switch err := wh.AddSubscription(r.Context(), sub); {
	case errors.Is(err, post.ErrConflict):
		// Two random ids met: nothing was stored.
		return newProblem(r, http.StatusConflict, typeConflict, "a subscription with the id made for this one exists already; nothing was stored, send the request again")
	case err != nil:
		return s.internal(r, err)
	}
	w.Header().Set("Location", "/v1/webhooks/"+url.PathEscape(sub.ID))
	return s.writeJSON(w, r, http.StatusCreated, subscriptionCreated{subscriptionView: viewSubscription(sub), Secret: sub.Secret})
}

// subscription reads the path's subscription; 404 for an unknown id.
func (s *Server) subscription(r *http.Request, wh Webhooks) (publishing.Subscription, *Problem) {
	id := r.PathValue("id")
	sub, err := wh.GetSubscription(r.Context(), id)
	if errors.Is(err, post.ErrNotFound) {
		return publishing.Subscription{}, noSubscription(r, id)
	}
	if err != nil {
		return publishing.Subscription{}, s.internal(r, err)
	}
	return sub, nil
}

func noSubscription(r *http.Request, id string) *Problem {
	return newProblem(r, http.StatusNotFound, typeBlank, "no webhook subscription "+strconv.Quote(id)+" (GET /v1/webhooks lists them)")
}

// getWebhook is GET /v1/webhooks/{id}.
func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	wh, prob := s.webhooks(r)
	if prob != nil {
		return prob
	}
	sub, prob := s.subscription(r, wh)
	if prob != nil {
		return prob
	}
	return s.writeJSON(w, r, http.StatusOK, viewSubscription(sub))
}

// deleteWebhook is DELETE /v1/webhooks/{id}: the subscription and its
// deliveries not yet made are removed.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	wh, prob := s.webhooks(r)
	if prob != nil {
		return prob
	}
	id := r.PathValue("id")
	switch err := wh.RemoveSubscription(r.Context(), id); {
	case errors.Is(err, post.ErrNotFound):
		return noSubscription(r, id)
	case err != nil:
		return s.internal(r, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// defaultDeliveries is how many deliveries a listing shows unless limit
// says otherwise.
const defaultDeliveries = 100

// deliveryStates are the states a listing may ask for.
var deliveryStates = []publishing.DeliveryState{publishing.DeliveryPending, publishing.DeliveryDelivered, publishing.DeliveryDead}

// listWebhookDeliveries is GET /v1/webhooks/{id}/deliveries: the
// subscription's deliveries, most recently updated first.
//
// The Deliveries port lists by state only, so the deliveries of every
// subscription in the state are read and this one's kept. The outbox
// keeps delivered deliveries 7 days and dead ones 30 (sqlitestore), which
// bounds the read; a filter in the port would need an index on the
// deliveries table and a change to every adapter of the port.
func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	wh, prob := s.webhooks(r)
	if prob != nil {
		return prob
	}
	q := r.URL.Query()
	for name := range q {
		if name != "state" && name != "limit" {
			return badRequest(r, name, "is not a query parameter of this listing", "use state, limit")
		}
	}
	state := publishing.DeliveryState(q.Get("state"))
	if state != "" && !slices.Contains(deliveryStates, state) {
		return badRequest(r, "state", fmt.Sprintf("%q is not a delivery state", state), "use pending, delivered or dead, or leave it out for every state")
	}
	limit := defaultDeliveries
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return badRequest(r, "limit", fmt.Sprintf("%q is not a number from 1 to %d", v, maxPageSize), "give how many deliveries to list, e.g. limit=100")
		}
		limit = n
	}
	sub, prob := s.subscription(r, wh)
	if prob != nil {
		return prob
	}
	all, err := wh.ListDeliveries(r.Context(), state, 0)
	if errors.Is(err, publishing.ErrDeliveryStateNotKept) {
		return badRequest(r, "state", fmt.Sprintf("%q: deliveries in this state are not kept on this runtime", state), "use state=dead, or leave state out")
	}
	if err != nil {
		return s.internal(r, err)
	}
	out := struct {
		Deliveries []deliveryView `json:"deliveries"`
	}{Deliveries: []deliveryView{}}
	for _, d := range all {
		if d.Subscription != sub.ID {
			continue
		}
		out.Deliveries = append(out.Deliveries, viewDelivery(d))
		if len(out.Deliveries) == limit {
			break
		}
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}

// redriveWebhookDelivery is POST /v1/webhooks/{id}/deliveries/{event_id}/
// redrive: the dead delivery of the event to the subscription is pending
// again, due now, with a new 24 h of retries and the same webhook-id.
func (s *Server) redriveWebhookDelivery(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	wh, prob := s.webhooks(r)
	if prob != nil {
		return prob
	}
	id := publishing.DeliveryID(r.PathValue("event_id"), r.PathValue("id"))
	switch err := wh.RedriveDelivery(r.Context(), id, s.cfg.Now()); {
	case errors.Is(err, post.ErrNotFound):
		return newProblem(r, http.StatusNotFound, typeBlank, "no delivery "+strconv.Quote(id)+" (GET /v1/webhooks/{id}/deliveries?state=dead lists them)")
	case errors.Is(err, post.ErrConflict):
		return newProblem(r, http.StatusConflict, typeConflict, "delivery "+strconv.Quote(id)+" is not dead; only a dead delivery is redriven")
	case err != nil:
		return s.internal(r, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
