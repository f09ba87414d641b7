package httpapi

import (
	"net/http"
	"time"

	"oncepost/shared/platform/catalog"
)

// platformView is what oncepost can promise on a platform
// (`oncepost platforms`), from the adapters' own capabilities.
type platformView struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Guarantee is exact, confirm by read-back, or human.
	Guarantee         string     `json:"guarantee"`
	Note              string     `json:"note,omitempty"`
	NativeIdempotency bool       `json:"native_idempotency"`
	LookupByHandle    bool       `json:"lookup_by_handle"`
	ReadableHistory   bool       `json:"readable_history"`
	Handle            string     `json:"handle"`
	ReadBack          string     `json:"read_back"`
	MaxCharacters     int        `json:"max_characters,omitempty"`
	MaxCharsWithMedia int        `json:"max_characters_with_media,omitempty"`
	MaxTextBytes      int        `json:"max_text_bytes,omitempty"`
	MaxMedia          int        `json:"max_media"`
	MaxMediaBytes     int64      `json:"max_media_bytes,omitempty"`
	MaxMediaPixels    int64      `json:"max_media_pixels,omitempty"`
	MediaFormats      []string   `json:"media_formats,omitempty"`
	MediaByURL        bool       `json:"media_by_url"`
	PostingLimits     []rateView `json:"posting_limits"`
}

// listPlatforms is GET /v1/platforms.
func (s *Server) listPlatforms(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	out := struct {
		Platforms []platformView `json:"platforms"`
	}{Platforms: []platformView{}}
	for _, k := range catalog.Kinds() {
		c := k.Capabilities
		v := platformView{Name: k.Name, Title: k.Title, Guarantee: string(k.Guarantee), Note: k.Note,
			NativeIdempotency: c.NativeIdempotency, LookupByHandle: c.LookupByHandle, ReadableHistory: c.ReadableHistory,
			Handle: c.Handle, ReadBack: c.ReadBack, MaxCharacters: c.MaxTextGraphemes, MaxCharsWithMedia: c.MaxTextWithMedia,
			MaxTextBytes: c.MaxTextBytes, MaxMedia: c.MaxMedia, MaxMediaBytes: c.MaxMediaBytes, MaxMediaPixels: c.MaxMediaPixels,
			MediaFormats: c.MediaFormats, MediaByURL: c.MediaByURL, PostingLimits: []rateView{}}
		for _, rt := range c.PostingLimits {
			v.PostingLimits = append(v.PostingLimits, rateView{Count: rt.Count, PerSeconds: int64(rt.Per / time.Second)})
		}
		out.Platforms = append(out.Platforms, v)
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}
