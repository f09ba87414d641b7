package sandbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const jsonType = "application/json"

func TestControlAccounts(t *testing.T) {
	s := start(t, Options{})
	u := s.URL() + "/sandbox/accounts"
	r := mustSend(t, http.MethodPost, u, "", jsonType, []byte(`{"username":"alice"}`), nil)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /sandbox/accounts: %d %s", r.status, r.body)
	}
	var got struct {
		ID           string `json:"id"`
		Username     string `json:"username"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	r.decode(t, &got)
	want := Account{ID: got.ID, Username: "alice", AccessToken: got.AccessToken, RefreshToken: got.RefreshToken}
	if diff := cmp.Diff([]Account{want}, s.Accounts()); diff != "" || got.ID == "" || got.AccessToken == "" {
		t.Fatalf("the answer is not the account made (-answer +Accounts):\n%s", diff)
	}
	if r := get(t, s.URL()+"/api/v1/accounts/verify_credentials", got.AccessToken); r.status != 200 {
		t.Errorf("the answered token: %d", r.status)
	}

	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		wantError   string
	}{
		{"a taken username, in another case", jsonType, `{"username":"ALICE"}`, 409, "username: @ALICE is taken by account " + got.ID},
		{"no username", jsonType, `{}`, 400, `username: must be 1 to 30 letters, digits or underscores, got ""`},
		{"a username Mastodon refuses", jsonType, `{"username":"bob smith"}`, 400, `username: must be 1 to 30 letters`},
		{"a username of the wrong type", jsonType, `{"username":7}`, 400, "username: must be a JSON string"},
		{"an unknown field", jsonType, `{"username":"bob","admin":true}`, 400, `body: unknown field "admin"`},
		{"not JSON", jsonType, `username=bob`, 400, "body: not valid JSON"},
		{"two objects", jsonType, `{"username":"bob"}{}`, 400, "body: data after the JSON object"},
		{"a form", formType, `username=bob`, 415, "body: send JSON with Content-Type: application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSend(t, http.MethodPost, u, "", tt.contentType, []byte(tt.body), nil)
			if r.status != tt.wantStatus || !strings.Contains(errorOf(t, r), tt.wantError) {
				t.Errorf("%d %s, want %d with an error containing %q", r.status, r.body, tt.wantStatus, tt.wantError)
			}
		})
	}
	if n := len(s.Accounts()); n != 1 {
		t.Errorf("%d accounts after the refused requests, want 1", n)
	}
}

func TestControlRefusesOtherHosts(t *testing.T) {
	s := New(Options{})
	h := s.Handler()
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:8080", 201},
		{"[::1]:8080", 201},
		{"localhost:8080", 201},
		{"LOCALHOST", 201},
		{"127.0.0.1", 201},
		{"rebound.example:8080", 403},
		{"10.0.0.1:8080", 403},
		{"", 403},
	}
	for i, tt := range tests {
		req := httptest.NewRequest(http.MethodPost, "/sandbox/accounts", strings.NewReader(`{"username":"u`+string(rune('a'+i))+`"}`))
		req.Host = tt.host
		req.Header.Set("Content-Type", jsonType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("Host %q: %d %s, want %d", tt.host, rec.Code, rec.Body, tt.want)
		}
	}
}

func TestControlFaults(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantError  string
	}{
		{"unknown route", `{"route":"POST /api/v1/nowhere","faults":[{"kind":"503"}]}`, 400,
			`route: unknown route "POST /api/v1/nowhere", want one of DELETE /api/v1/statuses/:id, GET /api/v1/accounts/:id/statuses`},
		{"no route", `{"faults":[{"kind":"503"}]}`, 400, "route: required, one of "},
		{"unknown kind", `{"route":"POST /api/v1/statuses","faults":[{"kind":"503"},{"kind":"5xx"}]}`, 400,
			`faults[1].kind: unknown fault kind "5xx", want one of 401, 429, 500-after-commit, 503, delay-after-commit, delay-before-commit, drop-request, drop-response`},
		{"no faults", `{"route":"POST /api/v1/statuses","faults":[]}`, 400, "faults: at least one fault is required"},
		{"delay without delay_ms", `{"route":"POST /api/v1/statuses","faults":[{"kind":"delay-before-commit"}]}`, 400,
			"faults[0].delay_ms: required for delay-before-commit"},
		{"negative delay", `{"route":"POST /api/v1/statuses","faults":[{"kind":"delay-after-commit","delay_ms":-5}]}`, 400,
			"faults[0].delay_ms: must be from 1 to 3600000, got -5"},
		{"delay_ms on a 503", `{"route":"POST /api/v1/statuses","faults":[{"kind":"503","delay_ms":5}]}`, 400,
			"faults[0].delay_ms: only for delay-before-commit and delay-after-commit"},
		{"retry_after_seconds on a 503", `{"route":"POST /api/v1/statuses","faults":[{"kind":"503","retry_after_seconds":5}]}`, 400,
			"faults[0].retry_after_seconds: only for 429"},
		{"retry_after_seconds zero", `{"route":"POST /api/v1/statuses","faults":[{"kind":"429","retry_after_seconds":0}]}`, 400,
			"faults[0].retry_after_seconds: must be from 1 to 86400, got 0"},
		{"a fractional delay", `{"route":"POST /api/v1/statuses","faults":[{"kind":"delay-after-commit","delay_ms":1.5}]}`, 400,
			"faults.delay_ms: must be a JSON int64"},
		{"a misspelt field", `{"route":"POST /api/v1/statuses","faults":[{"kind":"429","retry_after":3}]}`, 400,
			`body: unknown field "retry_after"`},
	}
	s := start(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustSend(t, http.MethodPost, s.URL()+"/sandbox/faults", "", jsonType, []byte(tt.body), nil)
			if r.status != tt.wantStatus || !strings.Contains(errorOf(t, r), tt.wantError) {
				t.Errorf("%d %s, want %d with an error containing %q", r.status, r.body, tt.wantStatus, tt.wantError)
			}
		})
	}
	s.mu.Lock()
	n := len(s.scripts)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("refused scripts were queued: %d routes", n)
	}

	t.Run("a script is played in order", func(t *testing.T) {
		a := s.AddAccount("alice")
		body := `{"route":"POST /api/v1/statuses","faults":[{"kind":"503"},{"kind":"429","retry_after_seconds":3},{"kind":"delay-before-commit","delay_ms":40}]}`
		if r := mustSend(t, http.MethodPost, s.URL()+"/sandbox/faults", "", jsonType, []byte(body), nil); r.status != http.StatusNoContent || len(r.body) != 0 {
			t.Fatalf("POST /sandbox/faults: %d %s, want 204", r.status, r.body)
		}
		if r := post(t, s, a, "one", ""); r.status != 503 {
			t.Errorf("first create: %d, want 503", r.status)
		}
		if r := post(t, s, a, "two", ""); r.status != 429 || r.header.Get("Retry-After") != "3" {
			t.Errorf("second create: %d Retry-After %q, want 429 and 3", r.status, r.header.Get("Retry-After"))
		}
		began := time.Now()
		mustStatus(t, post(t, s, a, "three", ""))
		if took := time.Since(began); took < 40*time.Millisecond {
			t.Errorf("third create answered after %v, want the 40 ms delay", took)
		}
		if got := s.Creates()[2].Fault; got != "delay-before-commit" {
			t.Errorf("third create's fault = %q", got)
		}
	})
}

func TestControlStatusesAndCreates(t *testing.T) {
	clock := newClock()
	s := start(t, Options{Now: clock.Now, MediaProcessingPolls: -1})
	a, b := s.AddAccount("alice"), s.AddAccount("bob")
	first := mustStatus(t, post(t, s, a, "first", "k1"))
	clock.Advance(time.Second)
	m := upload(t, s, a, []byte("img"), "")
	gone := mustStatus(t, post(t, s, a, "first", "k2", m.ID))
	mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+gone.ID, a.AccessToken, "", nil, nil)
	injected := s.InjectStatus(a.ID, "first")
	s.InjectStatus(b.ID, "bob's")
	web, err := s.AddToken(a.ID, "Web")
	if err != nil {
		t.Fatal(err)
	}
	byHand := mustStatus(t, post(t, s, web, "by hand", ""))

	r := get(t, s.URL()+"/sandbox/statuses?account="+a.ID, "")
	if r.status != 200 {
		t.Fatalf("GET /sandbox/statuses: %d %s", r.status, r.body)
	}
	var got []controlStatusJSON
	r.decode(t, &got)
	byID := map[string]Status{}
	s.mu.Lock()
	for _, st := range s.accounts[a.ID].statuses {
		byID[st.ID] = st.clone()
	}
	s.mu.Unlock()
	at := func(id string) string { return byID[id].CreatedAt.Format(timeFormat) }
	want := []controlStatusJSON{
		{ID: byHand.ID, Text: "by hand", CreatedAt: at(byHand.ID), Fingerprint: byID[byHand.ID].Fingerprint, App: "Web"},
		{ID: injected.ID, Text: "first", CreatedAt: at(injected.ID), Duplicate: true, Injected: true, Fingerprint: byID[injected.ID].Fingerprint, App: "sandbox"},
		{ID: gone.ID, Text: "first", CreatedAt: at(gone.ID), Deleted: true, IdempotencyKey: "k2", MediaCount: 1, Fingerprint: byID[gone.ID].Fingerprint, App: "sandbox"},
		{ID: first.ID, Text: "first", CreatedAt: at(first.ID), IdempotencyKey: "k1", Fingerprint: byID[first.ID].Fingerprint, App: "sandbox"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /sandbox/statuses (-want +got):\n%s", diff)
	}
	errs := []struct {
		query string
		want  int
		msg   string
	}{
		{"?account=999", 404, `account: no account "999"`},
		{"", 400, "account: required"},
	}
	for _, e := range errs {
		r := get(t, s.URL()+"/sandbox/statuses"+e.query, "")
		if r.status != e.want || !strings.Contains(errorOf(t, r), e.msg) {
			t.Errorf("GET /sandbox/statuses%s: %d %s, want %d %q", e.query, r.status, r.body, e.want, e.msg)
		}
	}
	c := s.AddAccount("carol")
	if r := get(t, s.URL()+"/sandbox/statuses?account="+c.ID, ""); string(r.body) != "[]" {
		t.Errorf("an account without statuses: %s, want []", r.body)
	}

	var creates []CreateRecord
	cr := get(t, s.URL()+"/sandbox/creates", "")
	cr.decode(t, &creates)
	if diff := cmp.Diff(s.Creates(), creates); diff != "" || len(creates) != 3 {
		t.Errorf("GET /sandbox/creates (-Creates +served):\n%s", diff)
	}
	var raw []map[string]json.RawMessage
	cr.decode(t, &raw)
	if _, ok := raw[0]["idempotency_key"]; !ok {
		t.Errorf("creates are not served with snake_case names: %s", cr.body)
	}
	if r := get(t, start(t, Options{}).URL()+"/sandbox/creates", ""); string(r.body) != "[]" {
		t.Errorf("no creates: %s, want []", r.body)
	}
}

func TestProfiles(t *testing.T) {
	if diff := cmp.Diff([]string{"flaky", "incident", "lossy", "none", "slow"}, ProfileNames()); diff != "" {
		t.Errorf("ProfileNames (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		want RandomFaults
	}{
		{"none", RandomFaults{}},
		{"flaky", RandomFaults{DelayRate: 0.05, Delay: 11 * time.Second, Loss: 0.03, ResponseLoss: 0.03}},
		{"slow", RandomFaults{DelayRate: 1, Delay: 2 * time.Second}},
		{"lossy", RandomFaults{Loss: 0.2, ResponseLoss: 0.2}},
		{"incident", RandomFaults{DelayRate: 1, Delay: 11 * time.Second}},
	}
	for _, tt := range tests {
		got, err := Profile(tt.name)
		if err != nil {
			t.Errorf("Profile(%q): %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Profile(%q) (-want +got):\n%s", tt.name, diff)
		}
	}
	_, err := Profile("chaotic")
	if err == nil || !strings.Contains(err.Error(), `unknown fault profile "chaotic", want one of flaky, incident, lossy, none, slow`) {
		t.Errorf("Profile(chaotic): %v", err)
	}
	for _, name := range ProfileNames() {
		rf, _ := Profile(name)
		if rf.Loss+rf.ResponseLoss > 1 || rf.DelayRate > 1 || (rf.DelayRate > 0) != (rf.Delay > 0) {
			t.Errorf("profile %s is inconsistent: %+v", name, rf)
		}
	}
}
