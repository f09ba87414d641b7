package platform

import (
	"testing"
)

func TestFingerprint(t *testing.T) {
	a, b := "aa11", "bb22"
	base := Fingerprint("Café opens at 9", []string{a, b})
	tests := []struct {
		name  string
		text  string
		media []string
		same  bool
	}{
		{"identical", "Café opens at 9", []string{a, b}, true},
		{"media order", "Café opens at 9", []string{b, a}, true},
		{"NFD text", "Cafe\u0301 opens at 9", []string{a, b}, true},
		{"CRLF and trailing space", "Café opens at 9 \r\n", []string{a, b}, true},
		{"uppercase sha", "Café opens at 9", []string{"AA11", b}, true},
		{"other text", "Café opens at 10", []string{a, b}, false},
		{"missing media", "Café opens at 9", []string{a}, false},
		{"text moved into media", "Café opens at", []string{"9", a, b}, false},
	}
	for _, tt := range tests {
		if got := Fingerprint(tt.text, tt.media) == base; got != tt.same {
			t.Errorf("%s: same fingerprint = %v, want %v", tt.name, got, tt.same)
		}
	}
	rp := RemotePost{Text: "Café opens at 9", MediaIDs: []string{"m2", "m1"}}
	if got := rp.Fingerprint(map[string]string{"m1": a, "m2": b}); got != base {
		t.Errorf("remote post fingerprint with mapped media differs")
	}
	if got := rp.Fingerprint(map[string]string{"m1": a}); got == base {
		t.Errorf("remote post with an unmapped media id matches")
	}
}

func TestCredentialNeverPrints(t *testing.T) {
	c := Credential{AccessToken: "secret-a", RefreshToken: "secret-r"}
	for _, s := range []string{c.String(), c.GoString()} {
		if s != "platform.Credential{redacted}" {
			t.Errorf("credential printed as %q", s)
		}
	}
}
