package sandbox

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	defaultStatusesLimit = 20
	maxStatusesLimit     = 40
)

var visibilities = map[string]bool{"public": true, "unlisted": true, "private": true, "direct": true}

// statusParams are the fields of a create request.
type statusParams struct {
	text       string
	mediaIDs   []string
	visibility string
	// inReplyTo is in_reply_to_id: the status this one replies to.
	inReplyTo string
}

// flexID is a media id sent as a JSON string or number.
type flexID string

// UnmarshalJSON accepts "123" and 123.
func (f *flexID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("media id must be a string or a number: %w", err)
	}
	*f = flexID(n.String())
	return nil
}

// uploadedFile is a file part of a multipart body.
type uploadedFile struct {
	data        []byte
	contentType string
}

// parseForm reads form fields from the query string and from an
// urlencoded or multipart body, as Rails merges them; files are returned
// apart.
func parseForm(c *call) (url.Values, map[string]uploadedFile, error) {
	values := c.r.URL.Query()
	files := map[string]uploadedFile{}
	ct := c.r.Header.Get("Content-Type")
	mt, params, _ := mime.ParseMediaType(ct)
	switch mt {
	case "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(c.body), params["boundary"])
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("reading multipart body: %w", err)
			}
			data, err := io.ReadAll(part)
			if err != nil {
				return nil, nil, fmt.Errorf("reading multipart part %q: %w", part.FormName(), err)
			}
			if part.FileName() != "" {
				files[part.FormName()] = uploadedFile{data: data, contentType: part.Header.Get("Content-Type")}
				continue
			}
			values.Add(part.FormName(), string(data))
		}
	default:
		body, err := url.ParseQuery(string(c.body))
		if err != nil {
			return nil, nil, fmt.Errorf("parsing urlencoded body: %w", err)
		}
		for k, vs := range body {
			values[k] = append(values[k], vs...)
		}
	}
	return values, files, nil
}

// parseStatusParams reads a create request, form-encoded or JSON.
func parseStatusParams(c *call) (statusParams, error) {
	mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if mt == "application/json" {
		var in struct {
			Status      string   `json:"status"`
			MediaIDs    []flexID `json:"media_ids"`
			Visibility  string   `json:"visibility"`
			InReplyToID *flexID  `json:"in_reply_to_id"`
		}
		if err := json.Unmarshal(c.body, &in); err != nil {
			return statusParams{}, fmt.Errorf("parsing JSON body: %w", err)
		}
		p := statusParams{text: in.Status, visibility: in.Visibility}
		if in.InReplyToID != nil {
			p.inReplyTo = string(*in.InReplyToID)
		}
		for _, id := range in.MediaIDs {
			p.mediaIDs = append(p.mediaIDs, string(id))
		}
		return p, nil
	}
	values, _, err := parseForm(c)
	if err != nil {
		return statusParams{}, err
	}
	p := statusParams{text: values.Get("status"), visibility: values.Get("visibility"), inReplyTo: values.Get("in_reply_to_id")}
	p.mediaIDs = slices.Concat(values["media_ids[]"], values["media_ids"])
	return p, nil
}

// createStatus is POST /api/v1/statuses. Like Mastodon's PostStatusService
// it answers an Idempotency-Key replay before any validation, then checks
// media, then text, and commits. The text is stored as Mastodon stores it
// (see prepareTextLocked) and the request's CreateRecord is completed.
func (s *Server) createStatus(c *call) reply {
	p, err := parseStatusParams(c)
	if err != nil {
		return errorReply(http.StatusBadRequest, "Error occurred while parsing request parameters")
	}
	key := c.r.Header.Get("Idempotency-Key")
	a := c.account

	s.mu.Lock()
	defer s.mu.Unlock()
	var rec *CreateRecord
	if c.createRec >= 0 {
		rec = &s.creates[c.createRec]
		rec.Fingerprint = s.wouldBeFingerprintLocked(a, p)
	}
	// refuse answers a create that commits nothing, journaling the
	// fingerprint it would have committed.
	refuse := func(msg string) reply {
		if rec != nil {
			s.journalCreateUpdateLocked(rec.Seq, &rec.Fingerprint, nil)
		}
		return errorReply(http.StatusUnprocessableEntity, msg)
	}
	// Mastodon's StatusesController finds the status replied to before
	// anything else (set_thread), and answers 404 when it is gone or not
	// visible.
	if p.inReplyTo != "" && s.findStatusLocked(p.inReplyTo) == nil {
		if rec != nil {
			s.journalCreateUpdateLocked(rec.Seq, &rec.Fingerprint, nil)
		}
		return errorReply(http.StatusNotFound, "The post you are trying to reply to does not appear to exist.")
	}
	now := s.opts.Now()
	idemKey := a.id + "\x00" + key
	useKey := key != "" && !s.opts.DisableIdempotency
	if useKey {
		if e, ok := s.idempotency[idemKey]; ok {
			if now.Before(e.expires) {
				if st := s.statuses[e.statusID]; st != nil && !st.deleted {
					s.stats.IdempotentReplays++
					rr := replayRec{StatusID: st.ID}
					if rec != nil {
						rec.StatusID = st.ID
						rr.Seq, rr.Fingerprint = rec.Seq, rec.Fingerprint
					}
					if s.j != nil {
						s.j.add(record{Op: opReplay, Replay: &rr})
					}
					return reply{status: http.StatusOK, body: s.statusJSONLocked(st, c.base, false, a)}
				}
			} else {
				// Not journaled: a replayed journal keeps the expired
				// entry, which is never answered from either.
				delete(s.idempotency, idemKey)
			}
		}
	}

	visibility := p.visibility
	if visibility == "" {
		visibility = "public"
	}
	if !visibilities[visibility] {
		return refuse("Validation failed: Visibility is not included in the list")
	}
	ms, msg := s.attachableMediaLocked(a, p.mediaIDs)
	if msg != "" {
		return refuse(msg)
	}
	text := s.prepareTextLocked(p.text)
	if isBlank(text) && len(ms) == 0 {
		return refuse("Validation failed: Text can't be blank")
	}
	if countCharacters(text) > s.opts.MaxCharacters {
		return refuse(fmt.Sprintf("Validation failed: Text character limit of %d exceeded", s.opts.MaxCharacters))
	}
	st := s.commitLocked(a, c.app, text, visibility, ms, key, c.base)
	st.InReplyToID = p.inReplyTo
	var idemExpires time.Time
	if useKey {
		idemExpires = now.Add(idempotencyTTL)
		s.idempotency[idemKey] = idempotencyEntry{statusID: st.num, expires: idemExpires}
	}
	seq := 0
	if rec != nil {
		rec.Committed, rec.StatusID = true, st.ID
		seq = rec.Seq
	}
	s.journalStatusLocked(st, idemExpires, seq)
	return reply{status: http.StatusOK, body: s.statusJSONLocked(st, c.base, false, a)}
}

// attachableMediaLocked resolves media ids to the account's unattached,
// processed media, or returns Mastodon's validation message.
func (s *Server) attachableMediaLocked(a *account, ids []string) ([]*media, string) {
	if len(ids) == 0 {
		return nil, ""
	}
	if len(ids) > s.opts.MaxMediaAttachments {
		return nil, fmt.Sprintf("Cannot attach more than %d files", s.opts.MaxMediaAttachments)
	}
	var ms []*media
	var missing []string
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		m := s.media[id]
		if m == nil || m.accountID != a.id || m.statusID != "" {
			missing = append(missing, id)
			continue
		}
		ms = append(ms, m)
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("Media %s not found or already attached to another post", strings.Join(missing, ", "))
	}
	for _, m := range ms {
		if m.pollsLeft > 0 {
			return nil, "Cannot attach files that have not finished processing. Try again in a moment!"
		}
	}
	return ms, ""
}

// findStatusLocked returns a live status by its id string.
func (s *Server) findStatusLocked(id string) *status {
	num, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return nil
	}
	st := s.statuses[num]
	if st == nil || st.deleted {
		return nil
	}
	return st
}

// getStatus is GET /api/v1/statuses/:id. The token is optional; the
// status's application is shown only when it is the status's own
// account's.
func (s *Server) getStatus(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.findStatusLocked(c.r.PathValue("id"))
	if st == nil {
		return errorReply(http.StatusNotFound, "Record not found")
	}
	return reply{status: http.StatusOK, body: s.statusJSONLocked(st, c.base, false, c.account)}
}

// statusSource is GET /api/v1/statuses/:id/source: the plain text.
func (s *Server) statusSource(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.findStatusLocked(c.r.PathValue("id"))
	if st == nil {
		return errorReply(http.StatusNotFound, "Record not found")
	}
	return reply{status: http.StatusOK, body: sourceJSON{ID: st.ID, Text: st.Text, SpoilerText: ""}}
}

// deleteStatus is DELETE /api/v1/statuses/:id; only the owner may delete,
// anyone else gets 404 as on Mastodon.
func (s *Server) deleteStatus(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.findStatusLocked(c.r.PathValue("id"))
	if st == nil || st.AccountID != c.account.id {
		return errorReply(http.StatusNotFound, "Record not found")
	}
	s.deleteLocked(st)
	s.journalLocked(record{Op: opDelete, Delete: &idRef{ID: st.ID}})
	return reply{status: http.StatusOK, body: s.statusJSONLocked(st, c.base, true, c.account)}
}

// deleteLocked marks a live status deleted and counts it.
func (s *Server) deleteLocked(st *status) {
	st.deleted = true
	s.accounts[st.AccountID].live--
	s.stats.Deleted++
}

// accountStatuses is GET /api/v1/accounts/:id/statuses, newest first, with
// Mastodon's pagination (app/models/concerns/paginable.rb,
// to_a_paginated_by_id, at mastodon/mastodon 5b395774c05d): when min_id is
// present it selects the limit statuses immediately newer than min_id
// (and older than max_id), still served newest first; otherwise the limit
// newest statuses older than max_id and newer than since_id. "Present"
// means given and not empty, as Rails' present? has it: min_id=0 selects
// the min_id mode and returns the account's oldest statuses, since_id=0
// excludes nothing and max_id=0 everything.
func (s *Server) accountStatuses(c *call) reply {
	q := c.r.URL.Query()
	limit := defaultStatusesLimit
	if v := q.Get("limit"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			limit = min(n, maxStatusesLimit)
		}
	}
	var bounds [3]uint64 // max_id, since_id, min_id
	var present [3]bool
	for i, name := range []string{"max_id", "since_id", "min_id"} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return errorReply(http.StatusBadRequest, name+" must be a status id")
		}
		bounds[i], present[i] = n, true
	}
	maxID, sinceID, minID := bounds[0], bounds[1], bounds[2]
	hasMax, hasSince, hasMin := present[0], present[1], present[2]

	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[c.r.PathValue("id")]
	if a == nil {
		return errorReply(http.StatusNotFound, "Record not found")
	}
	var page []*status
	if hasMin {
		// a.statuses is in commit order, which is id order.
		first, _ := slices.BinarySearchFunc(a.statuses, minID+1, func(st *status, id uint64) int { return cmp.Compare(st.num, id) })
		for _, st := range a.statuses[first:] { // oldest first
			if hasMax && st.num >= maxID {
				break
			}
			if st.deleted {
				continue
			}
			page = append(page, st)
			if len(page) == limit {
				break
			}
		}
		slices.Reverse(page)
	} else {
		for i := len(a.statuses) - 1; i >= 0; i-- { // newest first
			st := a.statuses[i]
			if hasSince && st.num <= sinceID {
				break
			}
			if st.deleted || (hasMax && st.num >= maxID) {
				continue
			}
			page = append(page, st)
			if len(page) == limit {
				break
			}
		}
	}
	out := make(rawJSONArray, 0, len(page))
	for _, st := range page {
		out = append(out, s.listJSONLocked(st, c.base, c.account))
	}
	rep := reply{status: http.StatusOK, body: out}
	if len(page) > 0 {
		path := c.base + "/api/v1/accounts/" + a.id + "/statuses?limit=" + strconv.Itoa(limit)
		var links []string
		if len(page) == limit {
			links = append(links, "<"+path+"&max_id="+page[len(page)-1].ID+`>; rel="next"`)
		}
		links = append(links, "<"+path+"&min_id="+page[0].ID+`>; rel="prev"`)
		rep.header = http.Header{"Link": {strings.Join(links, ", ")}}
	}
	return rep
}

// verifyCredentials is GET /api/v1/accounts/verify_credentials.
func (s *Server) verifyCredentials(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.accountJSONLocked(c.account, c.base)
	j.Source = &accountSource{Privacy: "public", Fields: []struct{}{}}
	return reply{status: http.StatusOK, body: j}
}

// instanceConfiguration is the part of the instance entity clients read
// limits from.
func (s *Server) instanceConfiguration() map[string]any {
	return map[string]any{
		"statuses": map[string]any{
			"max_characters":              s.opts.MaxCharacters,
			"max_media_attachments":       s.opts.MaxMediaAttachments,
			"characters_reserved_per_url": charactersReservedPerURL,
		},
		"media_attachments": map[string]any{
			"supported_mime_types": []string{"image/jpeg", "image/png", "image/gif", "image/webp"},
			"image_size_limit":     s.opts.ImageSizeLimit,
		},
	}
}

// instanceV1 is GET /api/v1/instance.
func (s *Server) instanceV1(c *call) reply {
	host := strings.TrimPrefix(strings.TrimPrefix(c.base, "http://"), "https://")
	return reply{status: http.StatusOK, body: map[string]any{
		"uri":           host,
		"title":         "oncepost sandbox",
		"version":       "4.3.0 (compatible; oncepost sandbox)",
		"configuration": s.instanceConfiguration(),
	}}
}

// instanceV2 is GET /api/v2/instance.
func (s *Server) instanceV2(c *call) reply {
	host := strings.TrimPrefix(strings.TrimPrefix(c.base, "http://"), "https://")
	return reply{status: http.StatusOK, body: map[string]any{
		"domain":        host,
		"title":         "oncepost sandbox",
		"version":       "4.3.0 (compatible; oncepost sandbox)",
		"configuration": s.instanceConfiguration(),
	}}
}
