package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/httpapi"
	"oncepost/shared/mediafit"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The composer: GET /compose shows the form, POST /compose checks it
// (action "check", the page again with the check done server side) or
// schedules it (action "schedule", Desk.Schedule under the form's key).
// Every rule is the desk's: the page shows Desk.Check's answer, and its
// script asks POST /v1/drafts/check for the same as the text is typed.

// MediaReader reads a stored attachment's bytes (the runtime's media
// store): the composer fits an image again when the accounts change, and
// serves the version each platform gets as its preview.
type MediaReader interface {
	// ReadMedia returns the bytes stored under ref, an error wrapping
	// post.ErrNotFound if there are none.
	ReadMedia(ctx context.Context, ref string) ([]byte, error)
}

// maxComposeImages is how many images one form holds.
const maxComposeImages = 4

// maxComposeBytes bounds a POST /compose: one new image (the API's
// upload limit) and 1 MiB of form.
func (h *Handler) maxComposeBytes() int64 {
	max := h.cfg.API.MaxMediaBytes
	if max <= 0 {
		max = httpapi.DefaultMaxMediaBytes
	}
	return max + 1<<20
}

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
	At    string
	Media []composeMedia
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

// showCompose is GET /compose: an empty form with a new key; the date
// and time default to the next full hour in the viewer's zone.
func (h *Handler) showCompose(w http.ResponseWriter, r *http.Request, s *session) {
	v := h.newView(s, "compose", "Compose")
	at := v.Now.Truncate(time.Hour).Add(time.Hour)
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

// datetimeLocal is an <input type="datetime-local">'s value.
const datetimeLocal = "2006-01-02T15:04"

// compose is POST /compose.
func (h *Handler) compose(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	v := h.newView(s, "compose", "Compose")
	form, errs := h.readComposeForm(ctx, r)
	dr, derrs := form.draft(v.Zone)
	for k, e := range derrs {
		errs[k] = append(errs[k], e...)
	}
	if len(errs) == 0 {
		h.fitMedia(ctx, &form, &dr)
	}
	if r.PostFormValue("action") == "schedule" && len(errs) == 0 {
		h.schedule(w, r, s, v, form, dr)
		return
	}
	status := http.StatusOK
	if len(errs) > 0 {
		status = http.StatusUnprocessableEntity
	}
	h.renderCompose(w, r, v, form, dr, errs, nil, status)
}

// schedule schedules the draft under the form's key and redirects to the
// calendar's week of its time; a refusal renders the form with each
// error at its field.
func (h *Handler) schedule(w http.ResponseWriter, r *http.Request, s *session, v *view, form composeForm, dr post.Draft) {
	// The fingerprint is the draft as sent: the same form sent twice is
	// the first request's retry; an edited one under the same key (after
	// a refusal nothing was stored, so none) would be refused.
	raw, err := json.Marshal(dr)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sum := sha256.Sum256(append([]byte("POST /compose\n"), raw...))
	req := &publishing.KeyedRequest{Scope: s.principal.ID, Key: "console:" + form.Key, Fingerprint: hex.EncodeToString(sum[:]),
		Encode: func(p post.Post) (int, []byte, error) {
			b, err := json.Marshal(p)
			return http.StatusCreated, b, err
		}}
	res, err := h.cfg.API.Desk.Schedule(r.Context(), dr, nil, req)
	switch {
	case errors.Is(err, publishing.ErrKeyReused):
		h.renderCompose(w, r, v, form, dr, nil, []string{"this form was already used for another post: reload the composer for a new one"}, http.StatusConflict)
		return
	case errors.Is(err, publishing.ErrKeyInFlight):
		h.renderCompose(w, r, v, form, dr, nil, []string{"this form is being scheduled already; look at the calendar in a moment"}, http.StatusConflict)
		return
	case err != nil && len(publishing.FieldErrors(err)) == 0:
		h.fail(w, r, err)
		return
	case err != nil:
		errs := map[string][]string{}
		var other []string
		for _, fe := range publishing.FieldErrors(err) {
			other = addFieldError(errs, other, nil, fe)
		}
		h.renderCompose(w, r, v, form, dr, errs, other, http.StatusUnprocessableEntity)
		return
	}
	p := res.Post
	var first time.Time
	var names []string
	for _, t := range p.Targets {
		if first.IsZero() || t.Slot.Before(first) {
			first = t.Slot
		}
		names = append(names, string(t.Account))
	}
	msg := fmt.Sprintf("Scheduled post %s for %s on %s.", p.ID, v.Time(first), strings.Join(names, ", "))
	if res.Replayed {
		msg = fmt.Sprintf("Post %s was scheduled already (this form was sent before): %s on %s.", p.ID, v.Time(first), strings.Join(names, ", "))
	}
	h.back(w, r, s, "/calendar?view=week&at="+url.QueryEscape(first.In(v.Zone).Format("2006-01-02")), msg, false)
}

// renderCompose checks the draft (Desk.Check) and renders the form with
// the check, the previews and the errors: those given (a refusal) or, if
// none, the check's.
func (h *Handler) renderCompose(w http.ResponseWriter, r *http.Request, v *view, form composeForm, dr post.Draft, errs map[string][]string, other []string, status int) {
	data, err := h.composeData(r.Context(), v, form)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(dr.Targets) > 0 || strings.TrimSpace(dr.Body) != "" {
		c, err := h.check(r.Context(), dr)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		data.Check = &c
		data.Previews = previews(c, dr)
		// The check's errors join the refusal's (the same, from
		// Schedule), each said once; an input the form itself refused
		// (no account, no time) keeps the form's words.
		if errs == nil {
			errs = map[string][]string{}
		}
		own := map[string]bool{}
		for id := range errs {
			own[id] = true
		}
		for _, fe := range c.Errors {
			other = addFieldError(errs, other, own, fe)
		}
	}
	if errs == nil {
		errs = map[string][]string{}
	}
	data.Errs, data.Other = errs, other
	h.render(w, r, status, "compose", data)
}

// check is the desk's check (the API's Desk is publishing.Desk's).
func (h *Handler) check(ctx context.Context, dr post.Draft) (publishing.DraftCheck, error) {
	return h.cfg.API.Desk.Check(ctx, dr, nil)
}

// previews are the check's targets, each with its platform's version of
// every image.
func previews(c publishing.DraftCheck, dr post.Draft) []composePreview {
	var out []composePreview
	for _, t := range c.Targets {
		p := composePreview{Target: t}
		for _, m := range c.Media {
			alt := ""
			if m.Index < len(dr.Media) {
				alt = dr.Media[m.Index].Alt
			}
			for _, v := range m.Versions {
				if v.Platform == t.Platform {
					p.Media = append(p.Media, previewMedia{MediaVersion: v, Alt: alt})
				}
			}
		}
		out = append(out, p)
	}
	return out
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

// addFieldError adds a refusal at its input (by the form's words for it,
// once; not at an input in skip) or, if it has none, to other.
func addFieldError(errs map[string][]string, other []string, skip map[string]bool, fe *post.FieldError) []string {
	msg := fe.Problem
	if fe.Fix != "" {
		msg += "; " + fe.Fix
	}
	id := inputOf(fe.Field)
	if id == "" {
		if m := fe.Field + ": " + msg; !slices.Contains(other, m) {
			other = append(other, m)
		}
		return other
	}
	if skip[id] {
		return other
	}
	if m := labelled(id, msg); !slices.Contains(errs[id], m) {
		errs[id] = append(errs[id], m)
	}
	return other
}

// labelled is a refusal in the words of the form: its input's label, then
// the problem.
func labelled(id, msg string) string {
	label := id
	switch {
	case id == "body":
		label = "Text"
	case strings.HasPrefix(id, "text-"):
		label = "Text for " + strings.TrimPrefix(id, "text-")
	case id == "accounts":
		label = "Accounts"
	case id == "at":
		label = "Date and time"
	case id == "image":
		label = "Image"
	case strings.HasPrefix(id, "alt-"):
		label = "Alt text of image " + strings.TrimPrefix(id, "alt-")
	case strings.HasPrefix(id, "media-"):
		label = "Image " + strings.TrimPrefix(id, "media-")
	}
	return label + ": " + msg
}

// inputOf is the id of the form's input a refused field belongs to, ""
// for none.
func inputOf(field string) string {
	switch {
	case field == "body":
		return "body"
	case strings.HasPrefix(field, "texts."):
		return "text-" + strings.TrimPrefix(field, "texts.")
	case field == "targets" || strings.HasSuffix(field, ".account"):
		return "accounts"
	case strings.HasSuffix(field, ".at") || field == "at":
		return "at"
	case field == "image":
		return "image"
	case strings.HasPrefix(field, "media["):
		i, rest, ok := strings.Cut(strings.TrimPrefix(field, "media["), "]")
		if !ok {
			return "image"
		}
		if _, err := strconv.Atoi(i); err != nil {
			return "image"
		}
		if rest == ".alt" {
			return "alt-" + i
		}
		return "media-" + i
	case field == "media":
		return "image"
	}
	return ""
}

// platformName is what a per-platform text's form field may be named
// after (a platform's name).
var platformName = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// readComposeForm reads the form: its fields, the images it carries, and
// a new image (field image, its alt text image_alt) stored as POST
// /v1/media stores one. Refusals are by input id.
func (h *Handler) readComposeForm(ctx context.Context, r *http.Request) (composeForm, map[string][]string) {
	errs := map[string][]string{}
	f := composeForm{Key: r.PostFormValue("key"), Body: r.PostFormValue("body"), At: r.PostFormValue("at"), Texts: map[string]string{}}
	if f.Key == "" || len(f.Key) > 64 {
		f.Key = randomID()
	}
	form := r.PostForm
	if r.MultipartForm != nil {
		form = r.MultipartForm.Value
	}
	f.Accounts = form["account"]
	for name, vals := range form {
		if p, ok := strings.CutPrefix(name, "text."); ok && platformName.MatchString(p) && len(vals) > 0 && strings.TrimSpace(vals[0]) != "" {
			f.Texts[p] = vals[0]
		}
	}
	refs, shas, types, fitted, alts := form["media_ref"], form["media_sha256"], form["media_type"], form["media_fitted"], form["media_alt"]
	remove := form["media_remove"]
	for i, ref := range refs {
		if i >= len(shas) || i >= len(types) || slices.Contains(remove, ref) {
			continue
		}
		m := composeMedia{Media: post.Media{Ref: ref, SHA256: shas[i], ContentType: types[i]}}
		if i < len(alts) {
			m.Alt = alts[i]
		}
		if i < len(fitted) && fitted[i] != "" {
			_ = json.Unmarshal([]byte(fitted[i]), &m.Fitted) // a mangled one is refitted or refused by validation
		}
		m.FittedJSON = fittedJSON(m.Fitted)
		f.Media = append(f.Media, m)
	}
	if r.MultipartForm != nil && len(r.MultipartForm.File["image"]) > 0 {
		fh := r.MultipartForm.File["image"][0]
		if fh.Size > 0 || fh.Filename != "" {
			m, err := h.storeImage(ctx, fh)
			switch {
			case err != nil:
				var refused *imageError
				if !errors.As(err, &refused) {
					h.log.ErrorContext(ctx, "compose: store an upload", "err", err)
					err = &imageError{"could not be stored; try again"}
				}
				errs["image"] = append(errs["image"], labelled("image", err.Error()))
			case len(f.Media) >= maxComposeImages:
				errs["image"] = append(errs["image"], labelled("image", fmt.Sprintf("the form holds %d images already; remove one first", maxComposeImages)))
			default:
				m.Alt = r.PostFormValue("image_alt")
				f.Media = append(f.Media, composeMedia{Media: m})
			}
		}
	}
	return f, errs
}

// imageError is a refused upload, in the words the form shows.
type imageError struct{ msg string }

func (e *imageError) Error() string { return e.msg }

// storeImage stores an uploaded image as POST /v1/media does: its type
// read from its bytes, decoded whole (mediafit.Verify), named by its
// SHA-256 (httpapi.MediaOf) and written through the API's media store.
func (h *Handler) storeImage(ctx context.Context, fh *multipart.FileHeader) (post.Media, error) {
	max := h.cfg.API.MaxMediaBytes
	if max <= 0 {
		max = httpapi.DefaultMaxMediaBytes
	}
	if fh.Size > max {
		return post.Media{}, &imageError{fmt.Sprintf("%s is %.1f MB, over the %.0f MB an upload may be; resize it", fh.Filename, float64(fh.Size)/1e6, float64(max)/1e6)}
	}
	file, err := fh.Open()
	if err != nil {
		return post.Media{}, fmt.Errorf("compose: open upload: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		return post.Media{}, fmt.Errorf("compose: read upload: %w", err)
	}
	if len(data) == 0 {
		return post.Media{}, &imageError{fmt.Sprintf("%s is empty", fh.Filename)}
	}
	ct := http.DetectContentType(data)
	m, ok := httpapi.MediaOf(data, ct)
	if !ok {
		return post.Media{}, &imageError{fmt.Sprintf("%s is %s, not an image the console takes; use PNG, JPEG, GIF or WebP", fh.Filename, ct)}
	}
	if err := mediafit.Verify(data, ct); err != nil {
		return post.Media{}, &imageError{fmt.Sprintf("%s is not a whole %s image (%v); save or download it again", fh.Filename, strings.TrimPrefix(ct, "image/"), err)}
	}
	if err := h.cfg.API.Media.WriteMedia(ctx, m, data); err != nil {
		return post.Media{}, fmt.Errorf("compose: store media %s: %w", m.Ref, err)
	}
	return m, nil
}

// draft is the form as a draft: the chosen accounts, each at the form's
// time read in the viewer's zone (sent as RFC 3339 with its offset).
// Refusals of the form's own fields are by input id.
func (f composeForm) draft(zone *time.Location) (post.Draft, map[string][]string) {
	errs := map[string][]string{}
	d := post.Draft{Body: f.Body}
	if len(f.Texts) > 0 {
		d.Texts = maps.Clone(f.Texts)
	}
	for _, m := range f.Media {
		d.Media = append(d.Media, post.DraftMedia{Media: m.Media})
	}
	var at string
	// A datetime-local value may carry seconds (HTML's normalized form
	// does when they are not zero); parseLocalTime reads both.
	switch t, err := parseLocalTime(f.At, zone); {
	case f.At == "":
		errs["at"] = append(errs["at"], labelled("at", "is empty; pick a date and time"))
	case err != nil:
		errs["at"] = append(errs["at"], labelled("at", fmt.Sprintf("%q is not a date and time (YYYY-MM-DDTHH:MM)", f.At)))
	default:
		at = t.Format(time.RFC3339)
	}
	for _, a := range f.Accounts {
		d.Targets = append(d.Targets, post.DraftTarget{Account: a, At: at})
	}
	if len(f.Accounts) == 0 {
		errs["accounts"] = append(errs["accounts"], labelled("accounts", "none is chosen; choose at least one"))
	}
	return d, errs
}

// fitMedia fits each image to the image limits of each platform the
// draft goes to (Desk.FitLimits, mediafit.Fit, as `oncepost post add`
// does): a version that had to be resized or re-encoded is stored and
// recorded as the image's version there (post.Media.Fitted). It needs the
// image's bytes (Config.Media); without it the images go as they are,
// and validation refuses one over a platform's byte limit. A draft the
// desk refuses is left as it is: the check says why.
func (h *Handler) fitMedia(ctx context.Context, f *composeForm, dr *post.Draft) {
	if h.cfg.Media == nil || len(dr.Media) == 0 {
		return
	}
	desk, ok := h.cfg.API.Desk.(interface {
		FitLimits(ctx context.Context, dr post.Draft) (post.Post, map[string]publishing.ImageLimits, error)
	})
	if !ok {
		return
	}
	_, limits, err := desk.FitLimits(ctx, *dr)
	if err != nil {
		return
	}
	for i := range f.Media {
		m := &f.Media[i]
		data, err := h.cfg.Media.ReadMedia(ctx, m.Ref)
		if err != nil {
			continue // validation says the attachment is missing
		}
		fitted := map[string]post.Fitted{}
		for _, name := range slices.Sorted(maps.Keys(limits)) {
			fl := limits[name]
			res, err := mediafit.Fit(data, m.ContentType, mediafit.Limits{MaxBytes: fl.MaxBytes, MaxPixels: fl.MaxPixels, Formats: fl.Formats})
			if err != nil || !res.Changed {
				continue // as it is: the check says what does not fit
			}
			v, ok := httpapi.MediaOf(res.Data, res.ContentType)
			if !ok {
				continue
			}
			if err := h.cfg.API.Media.WriteMedia(ctx, v, res.Data); err != nil {
				h.log.WarnContext(ctx, "compose: store a fitted image", "ref", v.Ref, "err", err)
				continue
			}
			fitted[name] = post.Fitted{Ref: v.Ref, SHA256: v.SHA256, ContentType: v.ContentType}
		}
		m.Fitted = nil
		if len(fitted) > 0 {
			m.Fitted = fitted
		}
		m.FittedJSON = fittedJSON(m.Fitted)
		dr.Media[i].Fitted = m.Fitted
	}
}

func fittedJSON(f map[string]post.Fitted) string {
	if len(f) == 0 {
		return ""
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// mediaRef is a stored image's ref, as MediaOf names them.
var mediaRef = regexp.MustCompile(`^[0-9a-f]{64}\.(png|jpg|gif|webp)$`)

var mediaTypes = map[string]string{"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

// showMedia is GET /compose/media/{ref}: a stored image (an original or
// a fitted version), for the previews. Its ref is its content hash, so
// it may be cached for good.
func (h *Handler) showMedia(w http.ResponseWriter, r *http.Request, _ *session) {
	ref := r.PathValue("ref")
	m := mediaRef.FindStringSubmatch(ref)
	if m == nil || h.cfg.Media == nil {
		http.NotFound(w, r)
		return
	}
	data, err := h.cfg.Media.ReadMedia(r.Context(), ref)
	if errors.Is(err, post.ErrNotFound) || errors.Is(err, publishing.ErrMediaInvalid) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", mediaTypes[m[1]])
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	w.Write(data)
}

// limitUpload answers 413 to a POST /compose over max bytes before its
// form is read, and bounds what is read of the others.
func limitUpload(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			http.Error(w, fmt.Sprintf("the form is %.1f MB, over the %.0f MB the composer takes at once: attach one image at a time", float64(r.ContentLength)/1e6, float64(max)/1e6), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}
