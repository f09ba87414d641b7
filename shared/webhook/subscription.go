package webhook

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// MaxDescriptionBytes bounds a subscription's description.
const MaxDescriptionBytes = 500

// SubscriptionRequest is a subscription as an operator asks for it, from
// the CLI (`oncepost webhook add`) or the API (POST /v1/webhooks).
type SubscriptionRequest struct {
	// URL is the receiver's; CheckURL's rules.
	URL string
	// Events are event type names (publishing.EventTypes); none means
	// every type. A name given twice counts once.
	Events []string
	// AllowPrivate lets the URL reach private, loopback and link-local
	// addresses.
	AllowPrivate bool
	// Description says what the receiver is; at most MaxDescriptionBytes
	// of UTF-8.
	Description string
}

// NewSubscription makes the subscription req asks for, created at now:
// its id ("wh_" and 10 random base32 characters) and its signing secret
// (NewSecret) made here, its URL checked by CheckURL and its event types
// against publishing.EventTypes. It is the one place these rules live:
// the CLI and the API both call it, then store the result
// (publishing.Subscriptions.AddSubscription) and show the secret once.
//
// Bad input is refused with *post.FieldErrors, one per field, joined:
// "url", "events[i]" (the index in req.Events), "description".
func NewSubscription(req SubscriptionRequest, now time.Time) (publishing.Subscription, error) {
	var errs []error
	if req.URL == "" {
		errs = append(errs, &post.FieldError{Field: "url", Problem: "is missing", Fix: "give the receiver's URL, e.g. https://cms.example.com/hooks/oncepost"})
	} else if err := CheckURL(req.URL, req.AllowPrivate); err != nil {
		errs = append(errs, &post.FieldError{Field: "url", Problem: urlProblem(err), Fix: urlFix})
	}
	var events []publishing.EventType
	for i, name := range req.Events {
		t := publishing.EventType(name)
		if !publishing.ValidEventType(t) {
			shown := name
			if len(shown) > 100 {
				shown = strings.ToValidUTF8(shown[:100], "") + "…"
			}
			errs = append(errs, &post.FieldError{Field: fmt.Sprintf("events[%d]", i), Problem: fmt.Sprintf("%q is not an event type", shown),
				Fix: "use " + EventTypeNames() + ", or none for every type"})
			continue
		}
		if !slices.Contains(events, t) {
			events = append(events, t)
		}
	}
	switch {
	case !utf8.ValidString(req.Description):
		errs = append(errs, &post.FieldError{Field: "description", Problem: "is not valid UTF-8", Fix: "write it as UTF-8 text"})
	case len(req.Description) > MaxDescriptionBytes:
		errs = append(errs, &post.FieldError{Field: "description", Problem: fmt.Sprintf("is %d bytes, over the limit of %d", len(req.Description), MaxDescriptionBytes),
			Fix: "say what the receiver is in fewer words"})
	}
	if len(errs) > 0 {
		return publishing.Subscription{}, errors.Join(errs...)
	}
	secret, err := NewSecret()
	if err != nil {
		return publishing.Subscription{}, err
	}
	return publishing.Subscription{ID: NewSubscriptionID(), URL: req.URL, Events: events, Secret: secret,
		AllowPrivate: req.AllowPrivate, Description: req.Description, CreatedAt: now.UTC()}, nil
}

// urlFix is the fix of a refused receiver URL.
const urlFix = "give an https URL of a public receiver (http only to localhost), or allow private receivers"

// urlProblem is CheckURL's refusal without its leading "url".
func urlProblem(err error) string {
	msg := err.Error()
	for _, p := range []string{"url: ", "url "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			return rest
		}
	}
	return msg
}

// NewSubscriptionID is a new subscription id: "wh_" and 10 random
// characters of the lowercase base32 alphabet (a–z, 2–7), 50 bits.
func NewSubscriptionID() string {
	return "wh_" + strings.ToLower(rand.Text()[:10])
}

// EventTypeNames lists publishing.EventTypes, comma-separated, for help
// and error messages.
func EventTypeNames() string {
	names := make([]string, len(publishing.EventTypes))
	for i, t := range publishing.EventTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}
