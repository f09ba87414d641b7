package discord

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/platform"
)

// The images of these tests, named as the publisher names them.
var (
	catPNG   = image("\x89PNG\r\n\x1a\n a cat, sleeping", "png", "image/png", "a cat, sleeping")
	dogJPEG  = image("\xff\xd8\xff a dog, running", "jpg", "image/jpeg", "")
	birdWebP = image("RIFF....WEBPVP8 a bird", "webp", "image/webp", "a bird")
)

// ignoreAttachmentID compares stored files without the ids the fake gave
// them.
var ignoreAttachmentID = cmpopts.IgnoreFields(fakeAttachment{}, "ID")

// payloadPart returns the parts with the payload_json part's bytes
// dropped (they are compared decoded, as fakeReq.Body).
func payloadPart(parts []fakePart) []fakePart {
	out := make([]fakePart, len(parts))
	for i, p := range parts {
		if p.Name == "payload_json" {
			p.Data = nil
		}
		out[i] = p
	}
	return out
}

// attachmentIDs are the ids of a stored message's files, in order.
func attachmentIDs(m fakeMsg) []string {
	var ids []string
	for _, a := range m.Attachments {
		ids = append(ids, a.ID)
	}
	return ids
}

// TestBotPublishWithImages: a post with two images is one Create Message
// request in multipart/form-data
// (https://discord.com/developers/docs/reference#uploading-files,
// https://discord.com/developers/docs/resources/message#create-message):
// payload_json (application/json) with content, nonce, enforce_nonce and
// attachments [{id: n, filename, description}], then files[0] and
// files[1] with their names, types and bytes. The message holds both
// files in order; read back, its MediaIDs are their ids. A repeat with the
// same handle is answered with the first message (enforce_nonce works the
// same with files).
func TestBotPublishWithImages(t *testing.T) {
	f := newFake(t)
	c := newClient(t, ModeBot, f.srv.URL)
	ctx := context.Background()
	const handle = "7m2kq4ze9xw3b5n8c1d6f0gh2a"
	req := platform.PublishRequest{Handle: handle, Text: "two pictures", Media: []platform.MediaUpload{catPNG, dogJPEG}}

	receipt, err := c.Publish(ctx, req)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	msgs := f.stored()
	if len(msgs) != 1 {
		t.Fatalf("fake stored %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	wantReceipt := platform.Receipt{RemoteID: m.ID, URL: f.srv.URL + "/channels/" + guildID + "/" + channelID + "/" + m.ID, CreatedAt: fixedNow}
	if diff := cmp.Diff(wantReceipt, receipt); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}

	got := oneMultipartCreate(t, f, "/api/v10/channels/")
	want := fakeReq{
		Method: "POST", Path: "/api/v10/channels/" + channelID + "/messages", Auth: "Bot " + botToken, UserAgent: DefaultUserAgent,
		Body: map[string]any{
			"content": "two pictures", "nonce": Nonce(handle), "enforce_nonce": true,
			"attachments": []any{
				map[string]any{"id": float64(0), "filename": catPNG.Filename, "description": "a cat, sleeping"},
				map[string]any{"id": float64(1), "filename": dogJPEG.Filename},
			},
		},
		Parts: []fakePart{
			{Name: "payload_json", ContentType: "application/json"},
			{Name: "files[0]", Filename: catPNG.Filename, ContentType: "image/png", Data: catPNG.Data},
			{Name: "files[1]", Filename: dogJPEG.Filename, ContentType: "image/jpeg", Data: dogJPEG.Data},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("create request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]fakeAttachment{keptAs(catPNG), keptAs(dogJPEG)}, m.Attachments, ignoreAttachmentID); diff != "" {
		t.Errorf("stored files (-want +got):\n%s", diff)
	}

	recent, err := c.Recent(ctx, 1)
	if err != nil || len(recent) != 1 {
		t.Fatalf("Recent = %+v, %v", recent, err)
	}
	if diff := cmp.Diff(attachmentIDs(m), recent[0].MediaIDs); diff != "" {
		t.Errorf("read back MediaIDs (-want +got):\n%s", diff)
	}
	if got, want := platform.LooseFingerprint(recent[0].Text, len(recent[0].MediaIDs)), platform.LooseFingerprint(req.Text, len(req.Media)); got != want {
		t.Errorf("loose fingerprint read back %s, want %s (text and 2 files)", got, want)
	}

	again, err := c.Publish(ctx, req)
	if err != nil {
		t.Fatalf("second Publish: %v", err)
	}
	if again.RemoteID != receipt.RemoteID || len(f.stored()) != 1 {
		t.Errorf("repeat got %q (first %q), %d stored; want the first message back", again.RemoteID, receipt.RemoteID, len(f.stored()))
	}
}

// TestWebhookPublishWithImage: Execute Webhook takes files the same way
// (https://discord.com/developers/docs/resources/webhook#execute-webhook,
// files[n], payload_json, attachments), with wait=true, no nonce and no
// Authorization; the message, read by id, exists.
func TestWebhookPublishWithImage(t *testing.T) {
	f := newFake(t)
	c := newClient(t, ModeWebhook, f.srv.URL)
	ctx := context.Background()

	receipt, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "a bird", Media: []platform.MediaUpload{birdWebP}})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	got := oneMultipartCreate(t, f, "/api/v10/webhooks/")
	want := fakeReq{
		Method: "POST", Path: "/api/v10/webhooks/" + webhookID + "/" + webhookToken, Query: "wait=true", UserAgent: DefaultUserAgent,
		Body: map[string]any{
			"content":     "a bird",
			"attachments": []any{map[string]any{"id": float64(0), "filename": birdWebP.Filename, "description": "a bird"}},
		},
		Parts: []fakePart{
			{Name: "payload_json", ContentType: "application/json"},
			{Name: "files[0]", Filename: birdWebP.Filename, ContentType: "image/webp", Data: birdWebP.Data},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("create request (-want +got):\n%s", diff)
	}
	msgs := f.stored()
	if len(msgs) != 1 || msgs[0].ID != receipt.RemoteID || msgs[0].WebhookID != webhookID {
		t.Fatalf("fake holds %+v, receipt %+v; want one webhook message, the receipt's", msgs, receipt)
	}
	if diff := cmp.Diff([]fakeAttachment{keptAs(birdWebP)}, msgs[0].Attachments, ignoreAttachmentID); diff != "" {
		t.Errorf("stored files (-want +got):\n%s", diff)
	}
	if ok, err := c.Exists(ctx, receipt.RemoteID); err != nil || !ok {
		t.Errorf("Exists = %v, %v; want true", ok, err)
	}
}

// TestServerErrorAfterCommitWithImagesIsFoundByLookup: the fake stores the
// message with its two files and answers 500. Publish is Ambiguous and
// sends once; Lookup finds the message by the fingerprint of its text and
// files, with MediaIDs its attachments' ids in order, passing over an
// earlier message of the bot with the same words and another file. The
// same text with another file, with one file or with none is not found.
func TestServerErrorAfterCommitWithImagesIsFoundByLookup(t *testing.T) {
	f := newFake(t)
	before := f.add(otherUserID, "hi all")
	f.addWith(botID, "daily digest", keptAs(birdWebP)) // the same words with another file, in the window
	f.afterCreate = func(w http.ResponseWriter, _ *http.Request, _ fakeMsg) bool {
		apiErr(w, http.StatusInternalServerError, 0, "500: Internal Server Error")
		return true
	}
	c := newClient(t, ModeBot, f.srv.URL)
	ctx := context.Background()
	req := platform.PublishRequest{Handle: "7m2kq4ze9xw3b5n8c1d6f0gh2a", Text: "daily digest", Media: []platform.MediaUpload{catPNG, dogJPEG}}

	_, err := c.Publish(ctx, req)
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("Publish outcome (-want +got):\n%s", diff)
	}
	if creates, _ := f.counts(); creates != 1 {
		t.Fatalf("fake received %d creates, want 1: Publish must not re-send on a 5xx", creates)
	}
	f.add(otherUserID, "nice pictures")

	msgs := f.stored()
	var ours fakeMsg
	for _, m := range msgs {
		if m.Nonce != "" {
			ours = m
		}
	}
	if len(ours.Attachments) != 2 {
		t.Fatalf("the fake holds %+v; want the message with its 2 files", msgs)
	}
	q := platform.LookupQuery{Handle: req.Handle, Text: req.Text, After: before.ID,
		Fingerprint: platform.Fingerprint(req.Text, []string{sha256Of(catPNG), sha256Of(dogJPEG)})}
	got, found, err := c.Lookup(ctx, q)
	if err != nil || !found {
		t.Fatalf("Lookup = %+v, %v, %v; want the message", got, found, err)
	}
	want := platform.RemotePost{RemoteID: ours.ID, Text: "daily digest", MediaIDs: attachmentIDs(ours), CreatedAt: ours.At,
		URL: f.srv.URL + "/channels/" + guildID + "/" + channelID + "/" + ours.ID}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}

	for name, shas := range map[string][]string{
		"another file":    {sha256Of(catPNG), sha256Of(birdWebP)},
		"one of the two":  {sha256Of(catPNG)},
		"no file":         nil,
		"one file more":   {sha256Of(catPNG), sha256Of(dogJPEG), sha256Of(birdWebP)},
		"one file, twice": {sha256Of(catPNG), sha256Of(catPNG)},
	} {
		q := q
		q.Fingerprint = platform.Fingerprint(req.Text, shas)
		got, found, err := c.Lookup(ctx, q)
		if err != nil || found {
			t.Errorf("%s: Lookup = %+v, %v, %v; want not found", name, got, found, err)
		}
	}
	if creates, _ := f.counts(); creates != 1 {
		t.Errorf("fake received %d creates, want 1", creates)
	}
}

// TestLookupMatchesAttachments: which messages of the bot with our text
// are ours by their files, as Discord returns them (Attachment objects
// with id and filename,
// https://discord.com/developers/docs/resources/message#attachment-object).
// A file counts by the SHA-256 its name states only when the name is
// exactly <64 lower-case hex>.<ext>; any other name never matches.
func TestLookupMatchesAttachments(t *testing.T) {
	cat, dog, bird := keptAs(catPNG), keptAs(dogJPEG), keptAs(birdWebP)
	renamed := cat
	renamed.Filename = "photo.png" // the cat's bytes under another name
	upper := cat
	upper.Filename = strings.ToUpper(strings.TrimSuffix(cat.Filename, ".png")) + ".png"
	noExt := cat
	noExt.Filename = strings.TrimSuffix(cat.Filename, ".png")

	ours := platform.Fingerprint("the post", []string{sha256Of(catPNG), sha256Of(dogJPEG)})
	textOnly := platform.Fingerprint("the post", nil)
	tests := []struct {
		name    string
		content string
		files   []fakeAttachment
		query   string
		want    bool
	}{
		{"same files", "the post", []fakeAttachment{cat, dog}, ours, true},
		{"same files in another order", "the post", []fakeAttachment{dog, cat}, ours, true},
		{"same files, text after normalisation", "the post \r\n", []fakeAttachment{cat, dog}, ours, true},
		{"another file", "the post", []fakeAttachment{cat, bird}, ours, false},
		{"a file missing", "the post", []fakeAttachment{cat}, ours, false},
		{"one file more", "the post", []fakeAttachment{cat, dog, bird}, ours, false},
		{"no files", "the post", nil, ours, false},
		{"one file twice", "the post", []fakeAttachment{cat, cat}, ours, false},
		{"same bytes under another name", "the post", []fakeAttachment{renamed, dog}, ours, false},
		{"upper-case hex name", "the post", []fakeAttachment{upper, dog}, ours, false},
		{"hex name without extension", "the post", []fakeAttachment{noExt, dog}, ours, false},
		{"same files, other words", "another post", []fakeAttachment{cat, dog}, ours, false},
		{"text-only query, message with a file", "the post", []fakeAttachment{cat}, textOnly, false},
		{"text-only query, message without files", "the post", nil, textOnly, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			start := f.add(otherUserID, "before")
			m := f.addWith(botID, tt.content, tt.files...)
			c := newClient(t, ModeBot, f.srv.URL)
			got, found, err := c.Lookup(context.Background(), platform.LookupQuery{Handle: "h", Fingerprint: tt.query, After: start.ID})
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if found != tt.want || (found && got.RemoteID != m.ID) {
				t.Errorf("Lookup = %+v, found %v; want found %v (message %s)", got, found, tt.want, m.ID)
			}
			if found {
				if diff := cmp.Diff(attachmentIDs(m), got.MediaIDs); diff != "" {
					t.Errorf("MediaIDs (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestPublishRefusesFilesBeforeSending: what Discord would refuse, and a
// file Lookup could not recognise, is refused without a request, in both
// modes: more than 10 files (error 30015), a file over 10 MiB
// (https://discord.com/developers/docs/reference#uploading-files), a
// request over 25 MiB (https://discord.com/developers/docs/resources/message#create-message),
// alt text over 1024 characters
// (https://discord.com/developers/docs/resources/message#attachment-object-attachment-request-structure),
// an empty file, a name that is not the SHA-256 of the bytes, and
// uploaded media ids. The limits themselves are sent, and the fake, which
// enforces Discord's limits, takes them.
func TestPublishRefusesFilesBeforeSending(t *testing.T) {
	sized := func(n int, fill byte) platform.MediaUpload {
		return image(string(bytes.Repeat([]byte{fill}, n)), "png", "image/png", "")
	}
	files := func(n int) []platform.MediaUpload {
		var out []platform.MediaUpload
		for i := range n {
			out = append(out, sized(100, byte('a'+i)))
		}
		return out
	}
	third := (25<<20)/3 + 1 // three of these are under 25 MiB of bytes, over it as a request
	renamed := catPNG
	renamed.Filename = "cat.png"
	otherHash := catPNG
	otherHash.Filename = dogJPEG.Filename
	upper := catPNG
	upper.Filename = strings.ToUpper(strings.TrimSuffix(catPNG.Filename, ".png")) + ".png"
	longAlt := catPNG
	longAlt.Alt = strings.Repeat("é", 1025)
	maxAlt := catPNG
	maxAlt.Alt = strings.Repeat("é", 1024)

	refused := []struct {
		name        string
		media       []platform.MediaUpload
		mediaIDs    []string
		want        string // Rejected reason
		wantMessage string
	}{
		{"11 files", files(11), nil, ReasonTooManyFiles, "at most 10"},
		{"a file of 10 MiB and a byte", []platform.MediaUpload{catPNG, sized(10<<20+1, 'x')}, nil, ReasonFileTooLarge, "10 MiB"},
		{"a request over 25 MiB", []platform.MediaUpload{sized(third, 'x'), sized(third, 'y'), sized(third, 'z')}, nil, ReasonTooLarge, "25 MiB"},
		{"alt text of 1025 characters", []platform.MediaUpload{longAlt}, nil, ReasonAltTooLong, "1024"},
		{"an empty file", []platform.MediaUpload{image("", "png", "image/png", "")}, nil, ReasonInvalidRequest, "empty"},
		{"a name that is not a hash", []platform.MediaUpload{renamed}, nil, ReasonFileName, "cat.png"},
		{"another file's hash", []platform.MediaUpload{otherHash}, nil, ReasonFileName, ""},
		{"an upper-case hash", []platform.MediaUpload{upper}, nil, ReasonFileName, ""},
		{"uploaded media ids", nil, []string{"m1"}, ReasonMediaUnsupported, ""},
	}
	for _, mode := range []Mode{ModeBot, ModeWebhook} {
		for _, tt := range refused {
			t.Run(string(mode)+"/"+tt.name, func(t *testing.T) {
				f := newFake(t)
				_, err := newClient(t, mode, f.srv.URL).Publish(context.Background(),
					platform.PublishRequest{Handle: "h", Text: "pictures", Media: tt.media, MediaIDs: tt.mediaIDs})
				if diff := cmp.Diff(outcome{Class: "rejected", Reason: tt.want}, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if err != nil && !strings.Contains(err.Error(), tt.wantMessage) {
					t.Errorf("error %q does not name %q", err, tt.wantMessage)
				}
				f.mu.Lock()
				n := len(f.reqs)
				f.mu.Unlock()
				if n != 0 {
					t.Errorf("fake received %d requests, want 0", n)
				}
			})
		}
	}

	accepted := []struct {
		name  string
		media []platform.MediaUpload
	}{
		{"10 files", files(10)},
		{"two files of 10 MiB", []platform.MediaUpload{sized(10<<20, 'x'), sized(10<<20, 'y')}},
		{"alt text of 1024 characters", []platform.MediaUpload{maxAlt}},
		{"a file without a content type", []platform.MediaUpload{{Filename: catPNG.Filename, Data: catPNG.Data}}},
	}
	for _, tt := range accepted {
		t.Run("bot/"+tt.name+" is sent", func(t *testing.T) {
			f := newFake(t)
			_, err := newClient(t, ModeBot, f.srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "pictures", Media: tt.media})
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			msgs := f.stored()
			if len(msgs) != 1 || len(msgs[0].Attachments) != len(tt.media) {
				t.Errorf("fake holds %d messages; want one with %d files", len(msgs), len(tt.media))
			}
		})
	}
}

// TestFakeCleansFilenames pins the fake's file-name cleaning to Discord's
// reported behaviour (discord/discord-api-docs#4292: "hello (world).png"
// becomes "hello_world.png"; #4847: a leading underscore is trimmed;
// #7754: cleaned like werkzeug's secure_filename), and shows that a name
// Publish sends passes unchanged.
func TestFakeCleansFilenames(t *testing.T) {
	for in, want := range map[string]string{
		"hello (world).png":  "hello_world.png",
		"_bug1.png":          "bug1.png",
		"ünïcödé.png":        "unicode.png",
		catPNG.Filename:      catPNG.Filename,
		birdWebP.Filename:    birdWebP.Filename,
		"../../etc/pass.png": "etc_pass.png",
	} {
		if got := cleanFilename(in); got != want {
			t.Errorf("cleanFilename(%q) = %q, want %q", in, got, want)
		}
	}
}

// oneMultipartCreate returns the one create the fake received under path
// prefix, a multipart/form-data request, with its payload_json part as
// Parts and its Content-Type cleared for comparing.
func oneMultipartCreate(t *testing.T, f *fakeDiscord, prefix string) fakeReq {
	t.Helper()
	creates := f.requests(http.MethodPost, prefix)
	if len(creates) != 1 {
		t.Fatalf("fake received %d creates, want 1", len(creates))
	}
	got := creates[0]
	if !strings.HasPrefix(got.ContentType, "multipart/form-data; boundary=") {
		t.Errorf("Content-Type = %q, want multipart/form-data with a boundary", got.ContentType)
	}
	got.ContentType, got.Parts = "", payloadPart(got.Parts)
	return got
}
