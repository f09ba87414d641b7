package ledger

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// An entry's JSON (post show --json, held --json) leaves out the times it
// does not have — a confirmed entry has no lease, retry or deferral — and
// never prints the zero time 0001-01-01T00:00:00Z.
func TestEntryJSONOmitsZeroTimes(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	e := NewEntry(PublishKey("news", "p1", now), Publish, "news", "p1", now, "fp", "owner", now, time.Minute)
	e, err := e.Confirm("remote-1", now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	if strings.Contains(got, "0001-01-01") {
		t.Errorf("confirmed entry %s shows a zero time", got)
	}
	for _, field := range []string{"lease_until", "retry_at", "deferred_since"} {
		if strings.Contains(got, `"`+field+`"`) {
			t.Errorf("confirmed entry %s has %s; want it left out", got, field)
		}
	}
	for _, field := range []string{`"slot"`, `"updated_at"`, `"expires_at"`} {
		if !strings.Contains(got, field) {
			t.Errorf("confirmed entry %s lacks %s", got, field)
		}
	}
}
