package post

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// MediaFor gives each platform its fitted version of an attachment and
// every other platform the original, alt text kept, order kept.
func TestMediaFor(t *testing.T) {
	orig := Media{Ref: "a.png", SHA256: "aaa", ContentType: "image/png", Alt: "a chart",
		Fitted: map[string]Fitted{"bluesky": {Ref: "b.jpg", SHA256: "bbb", ContentType: "image/jpeg"}}}
	plain := Media{Ref: "c.gif", SHA256: "ccc", ContentType: "image/gif", Alt: "a dot"}
	p := Post{Media: []Media{orig, plain}}
	tests := []struct {
		platform string
		want     []Media
	}{
		{"bluesky", []Media{{Ref: "b.jpg", SHA256: "bbb", ContentType: "image/jpeg", Alt: "a chart"}, plain}},
		{"mastodon", []Media{{Ref: "a.png", SHA256: "aaa", ContentType: "image/png", Alt: "a chart"}, plain}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, p.MediaFor(tt.platform)); diff != "" {
			t.Errorf("MediaFor(%s) (-want +got):\n%s", tt.platform, diff)
		}
	}
	if got := (Post{}).MediaFor("bluesky"); got != nil {
		t.Errorf("MediaFor of a post without media = %v, want nil", got)
	}
	if len(p.Media[0].Fitted) != 1 {
		t.Errorf("MediaFor changed the post's media: %+v", p.Media[0])
	}
}
