package pipeline

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// TestPublisherPacesOnAWS: the publisher function spaces sends to the
// platform's declared posting limits through the store, as the embedded
// runtime does. Two posts due at once to one Telegram chat (at most one
// message a second, https://core.telegram.org/bots/faq) reach one
// invocation: one is sent, the other waits for the budget
// (posting_limit) and nothing of it reaches the platform. The fake
// answers sendMessage as the Bot API does
// (https://core.telegram.org/bots/api#sendmessage).
func TestPublisherPacesOnAWS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two functions under the RIE")
	}
	ctx := context.Background()
	s := stacktest.New(t)
	var (
		mu   sync.Mutex
		sent []string
	)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.HasSuffix(r.URL.Path, "/sendMessage") {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
			return
		}
		var body struct {
			Text string `json:"text"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		sent = append(sent, body.Text)
		n := len(sent)
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": map[string]any{
			"message_id": n, "date": time.Now().Unix(), "text": body.Text, "chat": map[string]any{"id": int64(-1001234567890), "type": "channel"}}})
	}))
	t.Cleanup(fake.Close)
	acc := post.Account{ID: "tg", Platform: "telegram", Handle: "@news_bot", BaseURL: fake.URL, RemoteID: "-1001234567890", Gate: post.GateAuto}
	if err := s.Store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.PutCredential(ctx, acc.ID, platform.Credential{AccessToken: "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	s.Schedule(t, "first", "First of two.", slot, acc.ID)
	s.Schedule(t, "second", "Second of two.", slot, acc.ID)
	if res := fireAndPublish(t, s, slot); res.Received != 2 || res.InvokeErr != nil {
		t.Fatalf("publish: %+v", res)
	}
	var statuses []string
	for _, id := range []post.ID{"first", "second"} {
		p, err := s.Store.GetPost(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, string(p.Targets[0].Status)+" "+p.Targets[0].Reason)
	}
	mu.Lock()
	defer mu.Unlock()
	waiting := 0
	for _, st := range statuses {
		if strings.HasPrefix(st, string(post.Waiting)) && strings.Contains(st, "posting_limit") {
			waiting++
		}
	}
	if len(sent) != 1 || waiting != 1 {
		t.Errorf("%d messages sent %q, targets %q; want 1 sent and the other waiting for the posting budget", len(sent), sent, statuses)
	}
}
