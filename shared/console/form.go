package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/post"
)

// The forms, read in one place: the composer's (readComposeForm, draft)
// and the date and time fields of the actions (parseLocalTime), with the
// words each refusal is shown in (labelled, inputOf).

// readComposeForm reads the form: its fields, the images it carries, and
// a new image (field image, its alt text image_alt) stored as POST
// /v1/media stores one. Refusals are by input id.
func (h *Handler) readComposeForm(ctx context.Context, r *http.Request) (composeForm, map[string][]string) {
	errs := map[string][]string{}
	f := composeForm{Key: r.PostFormValue("key"), Body: r.PostFormValue("body"), At: r.PostFormValue("at"), Queue: r.PostFormValue("queue") == "1", Texts: map[string]string{}}
	if f.Key == "" || len(f.Key) > 64 {
		f.Key = randomID()
	}
	form := r.PostForm
	if r.MultipartForm != nil {
		form = r.MultipartForm.Value
	}
	f.Accounts = form["account"]
	// The thread's replies, in order; an emptied box drops its reply.
	for _, v := range form["reply"] {
		if strings.TrimSpace(v) != "" {
			f.Replies = append(f.Replies, v)
		}
	}
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
		switch {
		case fh.Size == 0 && fh.Filename == "":
			// No file chosen.
		case len(f.Media) >= maxComposeImages:
			// Refused before it is stored: nothing is written for it.
			errs["image"] = append(errs["image"], labelled("image", fmt.Sprintf("the form holds %d images already; remove one first", maxComposeImages)))
		default:
			m, err := h.storeImage(ctx, fh)
			if err != nil {
				var refused *imageError
				if !errors.As(err, &refused) {
					h.log.ErrorContext(ctx, "compose: store an upload", "err", err)
					err = &imageError{"could not be stored; try again"}
				}
				errs["image"] = append(errs["image"], labelled("image", err.Error()))
				break
			}
			m.Alt = r.PostFormValue("image_alt")
			f.Media = append(f.Media, composeMedia{Media: m})
		}
	}
	return f, errs
}

// draft is the form as a draft: the chosen accounts, each at the form's
// time read in the viewer's zone (sent as RFC 3339 with its offset).
// Refusals of the form's own fields are by input id.
func (f composeForm) draft(zone *time.Location) (post.Draft, map[string][]string) {
	errs := map[string][]string{}
	d := post.Draft{Body: f.Body, Queue: f.Queue, Thread: slices.Clone(f.Replies)}
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
	case f.At == "" && f.Queue:
		// Each account's next free slot.
	case f.Queue:
		errs["at"] = append(errs["at"], labelled("at", "is given while the post is added to the queue; empty it to take each account's next free slot, or uncheck the queue"))
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

// datetimeLocal is an <input type="datetime-local">'s value.
const datetimeLocal = "2006-01-02T15:04"

// parseLocalTime reads a datetime-local value (with or without seconds)
// in zone; an error names the field.
func parseLocalTime(v string, zone *time.Location) (time.Time, error) {
	for _, layout := range []string{datetimeLocal, datetimeLocal + ":05"} {
		if t, err := time.ParseInLocation(layout, v, zone); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("at: %q is not a date and time; pick one, e.g. %s", v, time.Now().In(zone).Format(datetimeLocal))
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
	case strings.HasPrefix(id, "reply-"):
		n, _ := strconv.Atoi(strings.TrimPrefix(id, "reply-"))
		label = "Reply " + strconv.Itoa(n+1)
	case id == "replies":
		label = "Replies"
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
	case strings.HasPrefix(field, "thread["):
		i, _, ok := strings.Cut(strings.TrimPrefix(field, "thread["), "]")
		if _, err := strconv.Atoi(i); ok && err == nil {
			return "reply-" + i
		}
		return "replies"
	case field == "thread":
		return "replies"
	}
	return ""
}

// platformName is what a per-platform text's form field may be named
// after (a platform's name).
var platformName = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)
