package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// TestPostWithAnImageOnAWS: an attachment imported into the stack's
// bucket (as `post add --media` does on AWS) reaches the platform through
// the publisher function, which reads it from S3.
func TestPostWithAnImageOnAWS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two functions under the RIE")
	}
	ctx := context.Background()
	s := stacktest.New(t)
	_, sa := s.AddAccount(t, "news")
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	img.Set(3, 3, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	m := post.Media{Ref: hex.EncodeToString(sum[:]) + ".png", SHA256: hex.EncodeToString(sum[:]), ContentType: "image/png", Alt: "a red dot"}
	if err := s.Media.PutMedia(ctx, m.Ref, m.ContentType, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	p := post.Post{ID: "with-image", Body: "A post with an image.", CreatedAt: time.Now().UTC(), Media: []post.Media{m},
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Scheduled, UpdatedAt: time.Now().UTC()}}}
	if err := s.Store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	trigger, _ := function(t, s, "trigger")
	publish, _ := function(t, s, "publisher")
	if _, err := trigger(map[string]string{"slot": slot.Format(time.RFC3339Nano), "scheduled_time": slot.Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	res, err := mapping(s, publish).PollOnce(ctx)
	if err != nil || res.Received != 1 || res.Failed != 0 || res.InvokeErr != nil {
		t.Fatalf("publish: %+v, %v", res, err)
	}
	e, err := s.Store.Get(ctx, ledger.PublishKey("news", string(p.ID), slot))
	if err != nil || e.State != ledger.Confirmed {
		t.Fatalf("entry %+v, %v; want confirmed", e.State, err)
	}
	sts := s.Sandbox.Statuses(sa.ID)
	if len(sts) != 1 || len(sts[0].MediaIDs) != 1 {
		t.Fatalf("statuses %+v; want one with one attachment", sts)
	}
	if calls := s.Calls.Snapshot(); calls["s3.GET /"+stacktest.MediaBucket+"/media/"+m.Ref] != 1 {
		t.Errorf("S3 calls %v; want one GetObject of the attachment", calls)
	}
}
