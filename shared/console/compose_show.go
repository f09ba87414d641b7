package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The composer: GET /compose shows the form, POST /compose checks it
// (action "check", the page again with the check done server side) or
// schedules it (action "schedule", Desk.Schedule under the form's key).
// Every rule is the desk's: the page shows Desk.Check's answer, and its
// script asks POST /v1/drafts/check for the same as the text is typed.

// composeMedia is an image attached to the form: uploaded (stored) by an
// earlier POST, carried in hidden fields, its alt text editable.
type composeMedia struct {
	post.Media
	// FittedJSON is Media.Fitted as JSON, for the hidden field.
	FittedJSON string
}

// composeForm is the composer's form as it was sent (or is shown).
type composeForm struct {
	// Key is the idempotency key made when the form was first shown: a
	// double submit of the form makes one post.
	Key      string
	Body     string
	Texts    map[string]string
	Accounts []string
	// At is the datetime-local value, in the viewer's zone.
	At string
	// Queue: each account's next free posting slot, not At.
	Queue bool
	// Replies are the thread's parts after the text, in order.
	Replies []string
	Media   []composeMedia
}

// composeAccount is an account as the form offers it.
type composeAccount struct {
	post.Account
	Checked bool
}

// composePreview is what one account gets: the text and each image's
// version there.
type composePreview struct {
	Target publishing.TargetCheck
	Media  []previewMedia
}

// previewMedia is an image's version on a platform, with its alt text.
type previewMedia struct {
	publishing.MediaVersion
	Alt string
}

type composeData struct {
	*view
	Form      composeForm
	Accounts  []composeAccount
	Platforms []string
	// Check is the desk's check of the form (nil before the first POST).
	Check    *publishing.DraftCheck
	Previews []composePreview
	// MediaPreviews: the images can be shown (Config.Media is set).
	MediaPreviews bool
	// Errs are the refusals by the form's input they belong to (its id);
	// Other are those of no input.
	Errs  map[string][]string
	Other []string
}

// Err is the first refusal of the input with the id.
func (d composeData) Err(id string) string {
	if e := d.Errs[id]; len(e) > 0 {
		return strings.Join(e, " ")
	}
	return ""
}

// Text is the form's own text for a platform.
func (d composeData) Text(platform string) string { return d.Form.Texts[platform] }

// ReplyBoxes are the thread's boxes: one per reply written, and an empty
// one for the next (the form grows a box each time it is checked).
func (d composeData) ReplyBoxes() []string {
	return append(append([]string{}, d.Form.Replies...), "")
}

// showCompose is GET /compose: an empty form with a new key; the date
// and time default to the next full hour in the viewer's zone.
func (h *Handler) showCompose(w http.ResponseWriter, r *http.Request, s *session) {
	v := h.newView(s, "compose", "Compose")
	// The next full hour of the viewer's clock: time.Truncate rounds the
	// instant on UTC's hours, which in a zone off by a half hour
	// (Asia/Kolkata, Australia/Adelaide) is a half hour.
	n := v.Now.In(v.Zone)
	at := time.Date(n.Year(), n.Month(), n.Day(), n.Hour()+1, 0, 0, 0, v.Zone)
	form := composeForm{Key: randomID(), At: at.Format(datetimeLocal), Texts: map[string]string{}}
	if a := r.URL.Query().Get("account"); a != "" {
		form.Accounts = []string{a}
	}
	data, err := h.composeData(r.Context(), v, form)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "compose", data)
}

// composeData is the page's data for the form: every account, checked
// as the form has them, and the platforms for the per-platform texts.
func (h *Handler) composeData(ctx context.Context, v *view, form composeForm) (composeData, error) {
	list, err := h.cfg.API.Accounts.ListAccounts(ctx)
	if err != nil {
		return composeData{}, fmt.Errorf("compose: list accounts: %w", err)
	}
	slices.SortFunc(list, func(a, b post.Account) int { return strings.Compare(string(a.ID), string(b.ID)) })
	d := composeData{view: v, Form: form, Errs: map[string][]string{}, MediaPreviews: h.cfg.Media != nil}
	for _, a := range list {
		d.Accounts = append(d.Accounts, composeAccount{Account: a, Checked: slices.Contains(form.Accounts, string(a.ID))})
		if !slices.Contains(d.Platforms, a.Platform) {
			d.Platforms = append(d.Platforms, a.Platform)
		}
	}
	slices.Sort(d.Platforms)
	return d, nil
}
