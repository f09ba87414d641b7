package s3media

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
)

// TestStoreOnFauxqs writes and reads attachments in fauxqs's S3: the same
// bytes back, the same object for a second import, ErrNotFound for a ref
// never stored, and refs that are not content hashes refused unsent.
func TestStoreOnFauxqs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against fauxqs")
	}
	client := s3.NewFromConfig(emulatortest.AWSConfig(t, emulatortest.Fauxqs(t)), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("media-test")}); err != nil {
		t.Fatal(err)
	}
	st, err := New(client, "media-test")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1000)
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:]) + ".png"
	for range 2 {
		if err := st.PutMedia(t.Context(), ref, "image/png", data); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.ReadMedia(t.Context(), ref)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadMedia = %d bytes, %v; want the %d bytes stored", len(got), err, len(data))
	}
	missing := hex.EncodeToString(make([]byte, 32)) + ".png"
	if _, err := st.ReadMedia(t.Context(), missing); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("ReadMedia of a ref never stored = %v, want post.ErrNotFound", err)
	}
	for _, bad := range []string{"../etc/passwd", ref + "/x", "ABC.png", hex.EncodeToString(sum[:]) + ".exe"} {
		if _, err := st.ReadMedia(t.Context(), bad); err == nil {
			t.Errorf("ReadMedia(%q) succeeded", bad)
		}
		if err := st.PutMedia(t.Context(), bad, "image/png", data); err == nil {
			t.Errorf("PutMedia(%q) succeeded", bad)
		}
	}
}
