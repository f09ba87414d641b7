package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// photoServer is sendPhoto as the Bot API documents it
// (https://core.telegram.org/bots/api#sendphoto, files "as
// multipart/form-data", https://core.telegram.org/bots/api#sending-files):
// it records the form and answers with the Message, or with status.
type photoServer struct {
	sends   atomic.Int32
	status  int
	chat    string
	caption string
	file    []byte
	ctype   string
	name    string
}

func (p *photoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/bot"+testToken+"/sendPhoto" {
		http.NotFound(w, r)
		return
	}
	p.sends.Add(1)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.chat, p.caption = r.FormValue("chat_id"), r.FormValue("caption")
	f, h, err := r.FormFile("photo")
	if err == nil {
		p.file, _ = io.ReadAll(f)
		p.ctype, p.name = h.Header.Get("Content-Type"), h.Filename
	}
	if p.status != 0 {
		w.WriteHeader(p.status)
		_, _ = fmt.Fprintf(w, `{"ok":false,"error_code":%d,"description":"Internal Server Error"}`, p.status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"ok":true,"result":{"message_id":77,"date":1764500000,"chat":{"id":%d,"type":"channel"},"caption":%q,"photo":[{"file_id":"AgAD","width":90,"height":60}]}}`, testChatID, p.caption)
}

// A post with a photo is one sendPhoto: the chat, the text as caption and
// the photo's bytes and type in the form; its message id is the receipt.
func TestPublishPhoto(t *testing.T) {
	p := &photoServer{}
	srv := adaptertest.LocalServer(t, p)
	photo := platform.MediaUpload{Filename: "harbour.jpg", ContentType: "image/jpeg", Data: []byte("\xff\xd8\xff jpeg bytes"), Alt: "the harbour"}
	rcpt, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "The harbour at dawn.", Media: []platform.MediaUpload{photo}})
	if err != nil {
		t.Fatal(err)
	}
	if rcpt.RemoteID != "77" || p.sends.Load() != 1 {
		t.Errorf("receipt %+v after %d sends, want message 77 after 1", rcpt, p.sends.Load())
	}
	got := []string{p.chat, p.caption, string(p.file), p.ctype, p.name}
	want := []string{testChat, "The harbour at dawn.", string(photo.Data), "image/jpeg", "harbour.jpg"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("form (-want +got):\n%s", diff)
	}
}

// Refused before anything is sent: a caption over 1,024 units, two photos.
// A 5xx after the photo went out is Ambiguous, sent once.
func TestPublishPhotoLimitsAndAmbiguity(t *testing.T) {
	p := &photoServer{}
	srv := adaptertest.LocalServer(t, p)
	c := newClient(t, srv.URL)
	photo := platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: []byte("\x89PNG")}
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: strings.Repeat("a", 1025), Media: []platform.MediaUpload{photo}})
	var rej *platform.Rejected
	if !errors.As(err, &rej) || rej.Reason != ReasonTextTooLong {
		t.Errorf("long caption: %v", err)
	}
	_, err = c.Publish(context.Background(), platform.PublishRequest{Text: "two", Media: []platform.MediaUpload{photo, photo}})
	if !errors.As(err, &rej) || rej.Reason != ReasonMediaUnsupported {
		t.Errorf("two photos: %v", err)
	}
	if n := p.sends.Load(); n != 0 {
		t.Fatalf("%d sends for refused posts", n)
	}
	p.status = http.StatusBadGateway
	_, err = c.Publish(context.Background(), platform.PublishRequest{Text: "ok", Media: []platform.MediaUpload{photo}})
	var amb *platform.Ambiguous
	if !errors.As(err, &amb) || p.sends.Load() != 1 {
		t.Errorf("502 after the send: %v after %d sends, want Ambiguous after 1", err, p.sends.Load())
	}
	if err != nil && strings.Contains(err.Error(), testSecret) {
		t.Errorf("the token is in the error: %v", err)
	}
}
