package webhook

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNewSecret(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, SecretPrefix) {
		t.Errorf("secret %q does not start with %q", a, SecretPrefix)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, SecretPrefix))
	if err != nil || len(raw) != SecretBytes {
		t.Errorf("secret decodes to %d bytes (%v), want %d", len(raw), err, SecretBytes)
	}
	if a == b {
		t.Error("two secrets are the same")
	}
	key, err := ParseSecret(a)
	if err != nil || string(key) != string(raw) {
		t.Errorf("ParseSecret(NewSecret()) = %x, %v; want %x", key, err, raw)
	}
}

func TestParseSecret(t *testing.T) {
	key32 := base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name    string
		secret  string
		wantLen int
		wantErr string
	}{
		{name: "with prefix", secret: "whsec_" + key32, wantLen: 32},
		{name: "without prefix", secret: key32, wantLen: 32},
		{name: "24 bytes", secret: "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 24)), wantLen: 24},
		{name: "64 bytes", secret: "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 64)), wantLen: 64},
		{name: "empty", secret: "", wantErr: "webhook secret is empty"},
		{name: "prefix only", secret: "whsec_", wantErr: "webhook secret is empty"},
		{name: "not base64", secret: "whsec_s3cr3t!!s3cr3t!!", wantErr: "not standard base64"},
		{name: "url alphabet", secret: "whsec_" + strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xff", 16))), "+", "-"), wantErr: "not standard base64"},
		{name: "too short", secret: "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16)), wantErr: "16 bytes; a secret is 24 to 64"},
		{name: "too long", secret: "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), wantErr: "65 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ParseSecret(tc.secret)
			if tc.wantErr == "" {
				if err != nil || len(key) != tc.wantLen {
					t.Fatalf("ParseSecret = %d bytes, %v; want %d bytes", len(key), err, tc.wantLen)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseSecret error = %v, want one saying %q", err, tc.wantErr)
			}
			if raw := strings.TrimPrefix(tc.secret, SecretPrefix); raw != "" && strings.Contains(err.Error(), raw) {
				t.Errorf("error %q holds the secret", err)
			}
		})
	}
}

// TestSignKnownAnswer: the example of the Standard Webhooks libraries'
// READMEs (the npm reference's sign gives the same string).
func TestSignKnownAnswer(t *testing.T) {
	got, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
}

func TestSignRefuses(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, secret, id, wantErr string
	}{
		{"empty id", secret, "", "webhook-id is empty"},
		{"dot in id", secret, "evt_a.b", "holds a \".\""},
		{"bad secret", "whsec_short", "evt_a", "webhook secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Sign(tc.secret, tc.id, time.Now(), []byte("{}"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Sign error = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestSignAsTheReferenceVerifier: what Sign makes, the npm reference
// verifier accepts; and the same signature over a changed body, id,
// timestamp or with another secret it refuses (so this test can fail).
func TestSignAsTheReferenceVerifier(t *testing.T) {
	verify := referenceVerifier(t)
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	id := "evt_7ksm2q4wbyx6zjrxh3vtn5cfpa"
	at := time.Now()
	body := []byte(`{"type":"post.published","timestamp":"2026-12-01T08:00:00Z","data":{"id":"evt_7ksm2q4wbyx6zjrxh3vtn5cfpa","text":"naïve café ✓"}}`)
	sig, err := Sign(secret, id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	headers := func(id string, ts time.Time, sig string) map[string]string {
		return map[string]string{HeaderID: id, HeaderTimestamp: strconv.FormatInt(ts.Unix(), 10), HeaderSignature: sig}
	}
	tampered := []byte(strings.Replace(string(body), "published", "failed", 1))
	tests := []struct {
		name    string
		secret  string
		headers map[string]string
		body    []byte
		ok      bool
	}{
		{"as signed", secret, headers(id, at, sig), body, true},
		{"rotation list with ours second", secret, headers(id, at, "v1,AAAA "+sig), body, true},
		{"tampered body", secret, headers(id, at, sig), tampered, false},
		{"another id", secret, headers("evt_other", at, sig), body, false},
		{"another timestamp", secret, headers(id, at.Add(-time.Second), sig), body, false},
		{"another secret", other, headers(id, at, sig), body, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := verify(tc.secret, tc.headers, tc.body)
			if tc.ok && err != nil {
				t.Errorf("reference verifier refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("reference verifier accepted it")
			}
		})
	}
}
