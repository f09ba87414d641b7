package mastodon

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// mediaServer accepts one upload and answers the polls of it from a script.
type mediaServer struct {
	t            *testing.T
	uploadStatus int
	polls        []int // status of each successive poll; the last repeats

	mu       sync.Mutex
	uploads  int
	pollsRun int
	form     map[string]string
}

func (s *mediaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v2/media":
		s.uploads++
		s.form = map[string]string{}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			s.t.Errorf("parse form: %v", err)
		} else {
			s.form["description"] = r.FormValue("description")
			f, h, err := r.FormFile("file")
			if err != nil {
				s.t.Errorf("form file: %v", err)
			} else {
				b, _ := io.ReadAll(f)
				f.Close()
				s.form["filename"] = h.Filename
				s.form["content-type"] = h.Header.Get("Content-Type")
				s.form["data"] = string(b)
			}
		}
		url := any("https://files.example/m1.png")
		if s.uploadStatus == http.StatusAccepted {
			url = nil
		}
		writeJSON(w, s.uploadStatus, map[string]any{"id": "m1", "type": "image", "url": url})
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/media/m1":
		status := s.polls[min(s.pollsRun, len(s.polls)-1)]
		s.pollsRun++
		switch status {
		case http.StatusOK:
			writeJSON(w, status, map[string]any{"id": "m1", "type": "image", "url": "https://files.example/m1.png"})
		case http.StatusPartialContent:
			writeJSON(w, status, map[string]any{"id": "m1", "type": "image", "url": nil})
		default:
			writeJSON(w, status, map[string]string{"error": "Error processing thumbnail for uploaded media"})
		}
	default:
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestUploadMedia(t *testing.T) {
	upload := platform.MediaUpload{Handle: "up-1", Filename: `chart "q1".png`, ContentType: "image/png", Data: []byte("\x89PNG data"), Alt: "A bar chart"}
	ready := platform.MediaReceipt{RemoteID: "m1", URL: "https://files.example/m1.png"}
	tests := []struct {
		name         string
		uploadStatus int
		polls        []int
		want         platform.MediaReceipt
		wantOut      outcome
		wantPolls    int
	}{
		{"processed synchronously", 200, []int{200}, ready, outcome{Class: "ok"}, 0},
		{"202 then 206 then 200", 202, []int{206, 206, 200}, ready, outcome{Class: "ok"}, 3},
		{"processing fails", 202, []int{206, 422}, platform.MediaReceipt{}, outcome{Class: "rejected", Status: 422, Reason: "processing_failed", Message: "Error processing thumbnail for uploaded media"}, 2},
		{"poll keeps failing", 202, []int{500}, platform.MediaReceipt{}, outcome{Class: "ambiguous"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := &mediaServer{t: t, uploadStatus: tt.uploadStatus, polls: tt.polls}
			srv := newServer(t, ms)
			got, err := newClient(t, srv.URL).UploadMedia(context.Background(), upload)
			if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			if ms.uploads != 1 || ms.pollsRun != tt.wantPolls {
				t.Errorf("server saw %d uploads and %d polls, want 1 and %d", ms.uploads, ms.pollsRun, tt.wantPolls)
			}
			wantForm := map[string]string{"filename": `chart "q1".png`, "content-type": "image/png", "data": "\x89PNG data", "description": "A bar chart"}
			if diff := cmp.Diff(wantForm, ms.form); diff != "" {
				t.Errorf("form (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUploadMediaStillProcessingWhenContextEnds(t *testing.T) {
	ms := &mediaServer{t: t, uploadStatus: 202, polls: []int{206}}
	srv := newServer(t, ms)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	_, err := newClient(t, srv.URL).UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: []byte("png")})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	var pending *MediaPendingError
	if !errors.As(err, &pending) || pending.RemoteID != "m1" {
		t.Errorf("error %q does not carry the pending attachment m1", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
	}
	if ms.uploads != 1 {
		t.Errorf("server saw %d uploads, want 1", ms.uploads)
	}
}

func TestUploadMediaWithoutAlt(t *testing.T) {
	var gotDescription []string
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("parse form: %v", err)
		}
		gotDescription = r.MultipartForm.Value["description"]
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/form-data; boundary=") {
			t.Errorf("content type %q", ct)
		}
		writeJSON(w, 200, map[string]any{"id": "m9", "url": "https://files.example/m9"})
	}))
	got, err := newClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{Data: []byte("bytes")})
	if err != nil {
		t.Fatalf("UploadMedia: %v", err)
	}
	if got.RemoteID != "m9" || gotDescription != nil {
		t.Errorf("receipt %+v, description %q; want m9 and no description field", got, gotDescription)
	}
}
