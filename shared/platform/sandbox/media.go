package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
)

// uploadMedia is POST /api/v2/media: multipart "file" and "description".
// The media is stored at once; it answers 202 with url null while it is
// "processing" (see Options.MediaProcessingPolls), or 200 when processing
// is disabled.
func (s *Server) uploadMedia(c *call) reply {
	values, files, err := parseForm(c)
	if err != nil {
		return errorReply(http.StatusBadRequest, "Error occurred while parsing request parameters")
	}
	f, ok := files["file"]
	if !ok || len(f.data) == 0 {
		return errorReply(http.StatusUnprocessableEntity, "Validation failed: File can't be blank")
	}
	sum := sha256.Sum256(f.data)
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &media{
		id:          s.nextIDLocked(s.opts.Now()),
		accountID:   c.account.id,
		data:        f.data,
		contentType: f.contentType,
		description: values.Get("description"),
		sha256:      hex.EncodeToString(sum[:]),
		pollsLeft:   max(s.opts.MediaProcessingPolls, 0),
	}
	s.media[m.id] = m
	if s.j != nil {
		s.j.add(record{Op: opMedia, Media: &mediaRec{
			ID: m.id, Account: m.accountID, Data: m.data, ContentType: m.contentType,
			Description: m.description, SHA256: m.sha256, PollsLeft: m.pollsLeft,
		}})
	}
	status := http.StatusAccepted
	if m.pollsLeft == 0 {
		status = http.StatusOK
	}
	return reply{status: status, body: s.mediaJSONLocked(m, c.base)}
}

// getMedia is GET /api/v1/media/:id: 206 while processing, then 200. As on
// Mastodon only the owner's unattached media can be read: once attached to
// a status it is 404.
func (s *Server) getMedia(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.media[c.r.PathValue("id")]
	if m == nil || m.accountID != c.account.id || m.statusID != "" {
		return errorReply(http.StatusNotFound, "Record not found")
	}
	if m.pollsLeft > 0 {
		// This poll is answered "still processing"; once all of them have
		// been, the media is processed and can be attached.
		m.pollsLeft--
		s.journalLocked(record{Op: opMediaPoll, MediaPoll: &idRef{ID: m.id}})
		j := s.mediaJSONLocked(m, c.base)
		j.URL, j.PreviewURL = nil, nil
		return reply{status: http.StatusPartialContent, body: j}
	}
	return reply{status: http.StatusOK, body: s.mediaJSONLocked(m, c.base)}
}

// mediaFile is GET /media/:id, the bytes behind a media url.
func (s *Server) mediaFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	m := s.media[r.PathValue("id")]
	var data []byte
	var ct string
	if m != nil && m.pollsLeft <= 0 {
		data, ct = m.data, m.contentType
	}
	s.mu.Unlock()
	if data == nil {
		writeJSON(w, http.StatusNotFound, errorBody("Record not found"))
		return
	}
	if ct == "" {
		ct = http.DetectContentType(data)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
