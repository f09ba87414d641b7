package x

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// TestUploadMediaHappyPath: a file of two segments goes through
// initialize, append ×2, finalize, two STATUS polls (in_progress, then
// succeeded) and the alt-text metadata call, in that order, each with the
// bearer token (the fake refuses anything else). Shapes: see fakeX.mediaRoute.
func TestUploadMediaHappyPath(t *testing.T) {
	f := newFakeX(t)
	f.states = []string{"in_progress", "succeeded"}
	srv := newServer(t, f)
	data := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, segmentSize/4+3) // 4 MiB + 12 bytes
	got, err := newClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{
		Handle: "m1", Filename: "chart.png", ContentType: "image/png", Data: data, Alt: "A bar chart of posts per day",
	})
	if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(platform.MediaReceipt{RemoteID: "1880028106020515841"}, got); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := got.RemoteID
	wantRequests := []string{
		"POST /2/media/upload/initialize",
		"POST /2/media/upload/" + id + "/append",
		"POST /2/media/upload/" + id + "/append",
		"POST /2/media/upload/" + id + "/finalize",
		"GET /2/media/upload",
		"GET /2/media/upload",
		"POST /2/media/metadata",
	}
	if diff := cmp.Diff(wantRequests, f.requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	md := f.media[id]
	if md == nil {
		t.Fatalf("fake has no media %s", id)
	}
	if md.mediaType != "image/png" || md.category != "tweet_image" || md.total != len(data) || !bytes.Equal(md.data, data) || !md.finalized {
		t.Errorf("upload: type %q category %q total %d, %d bytes received, finalized %v", md.mediaType, md.category, md.total, len(md.data), md.finalized)
	}
	if diff := cmp.Diff([]int{0, 1}, md.segments); diff != "" {
		t.Errorf("segment indexes (-want +got):\n%s", diff)
	}
	if md.alt != "A bar chart of posts per day" {
		t.Errorf("alt text = %q", md.alt)
	}
}

// TestUploadMediaCategories: media_type and media_category of the
// initialize call (https://docs.x.com/x-api/media/initialize-media-upload:
// tweet_image, tweet_gif, tweet_video) per content type, sniffed when
// none is given.
func TestUploadMediaCategories(t *testing.T) {
	tests := []struct {
		name, contentType string
		data              []byte
		wantType, wantCat string
	}{
		{"gif", "image/gif", []byte("GIF89a..."), "image/gif", "tweet_gif"},
		{"video", "video/mp4", []byte("....ftypisom"), "video/mp4", "tweet_video"},
		{"sniffed png without alt", "", []byte("\x89PNG\r\n\x1a\n0000"), "image/png", "tweet_image"},
		{"parameters dropped", "image/jpeg; charset=binary", []byte("\xff\xd8\xff"), "image/jpeg", "tweet_image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeX(t)
			srv := newServer(t, f)
			got, err := newClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{ContentType: tt.contentType, Data: tt.data})
			if err != nil {
				t.Fatalf("UploadMedia: %v", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			md := f.media[got.RemoteID]
			if md.mediaType != tt.wantType || md.category != tt.wantCat {
				t.Errorf("media_type %q category %q, want %q %q", md.mediaType, md.category, tt.wantType, tt.wantCat)
			}
			for _, r := range f.requests {
				if r == "POST /2/media/metadata" {
					t.Error("alt text set without Alt")
				}
			}
		})
	}
}

// TestUploadMediaProcessingFailed: X reports the state failed
// (https://docs.x.com/x-api/media/get-media-upload-status); the upload is
// Rejected with X's message and nothing more is sent.
func TestUploadMediaProcessingFailed(t *testing.T) {
	f := newFakeX(t)
	f.states = []string{"in_progress", "failed"}
	srv := newServer(t, f)
	_, err := newClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{ContentType: "image/png", Data: []byte("png"), Alt: "x"})
	want := outcome{Class: "rejected", Reason: "processing_failed", Message: "upload media: status: media 1880028106020515841: Unsupported image format"}
	if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if last := f.requests[len(f.requests)-1]; last != "GET /2/media/upload" {
		t.Errorf("last request %q, want the failing status poll (no alt text after a failure)", last)
	}
}

// TestUploadMediaStatusPollFails: the file was uploaded but its state
// cannot be read (GET /2/media/upload keeps answering 503,
// https://docs.x.com/x-api/media/get-media-upload-status): Ambiguous, not
// a refusal.
func TestUploadMediaStatusPollFails(t *testing.T) {
	f := newFakeX(t)
	f.states = []string{"pending"}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, http.StatusServiceUnavailable, problemJSON(503, "Service Unavailable", "Service Unavailable"))
			return
		}
		f.ServeHTTP(w, r)
	}))
	_, err := newClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{ContentType: "image/png", Data: []byte("png")})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

// TestUploadMediaRefusesLocally: what X cannot take (a type that is
// neither image nor video, no bytes, alt text over the 1000 characters of
// https://docs.x.com/x-api/media/create-media-metadata) is refused before
// any request.
func TestUploadMediaRefusesLocally(t *testing.T) {
	long := string(bytes.Repeat([]byte("a"), 1001))
	tests := []struct {
		name string
		m    platform.MediaUpload
		want outcome
	}{
		{"pdf", platform.MediaUpload{ContentType: "application/pdf", Data: []byte("%PDF")}, outcome{Class: "rejected", Reason: "media_unsupported",
			Message: "upload media: X takes images and videos, not application/pdf"}},
		{"empty", platform.MediaUpload{ContentType: "image/png"}, outcome{Class: "rejected", Reason: "invalid_request", Message: "upload media: no data"}},
		{"alt text too long", platform.MediaUpload{ContentType: "image/png", Data: []byte("png"), Alt: long}, outcome{Class: "rejected", Reason: "alt_text_too_long",
			Message: "upload media: alt text of 1001 characters, X allows 1000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
			_, err := newClient(t, srv.URL).UploadMedia(context.Background(), tt.m)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n.Load() != 0 {
				t.Errorf("server received %d requests, want 0", n.Load())
			}
		})
	}
}
