package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/dynamostore/streamtest"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// plain renders an SDK attribute value as DynamoDB's JSON shape
// ({"S": …}, {"L": […]}, …), for comparing (the SDK's types carry
// unexported fields cmp cannot look into).
func plain(v types.AttributeValue) any {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": x.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": x.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": x.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": x.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": x.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": x.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": x.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": x.Value}
	case *types.AttributeValueMemberL:
		l := []any{}
		for _, e := range x.Value {
			l = append(l, plain(e))
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": plainItem(x.Value)}
	}
	return fmt.Sprintf("unexpected %T", v)
}

func plainItem(it map[string]types.AttributeValue) map[string]any {
	if it == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range it {
		out[k] = plain(v)
	}
	return out
}

// Every DynamoDB type in a stream record's image, as Lambda delivers it
// (JSON, decoded by aws-lambda-go), becomes the SDK's value, nested ones
// included; and the test helper's inverse gives the same image back.
func TestStreamImageEveryType(t *testing.T) {
	tests := []struct {
		name string
		json string // one attribute value in the stream's JSON
		want any
	}{
		{"string", `{"S":"héllo"}`, map[string]any{"S": "héllo"}},
		{"empty string", `{"S":""}`, map[string]any{"S": ""}},
		{"number", `{"N":"-12.50"}`, map[string]any{"N": "-12.50"}},
		{"binary", `{"B":"AAEC/w=="}`, map[string]any{"B": []byte{0, 1, 2, 255}}},
		{"true", `{"BOOL":true}`, map[string]any{"BOOL": true}},
		{"false", `{"BOOL":false}`, map[string]any{"BOOL": false}},
		{"null", `{"NULL":true}`, map[string]any{"NULL": true}},
		{"string set", `{"SS":["a","b"]}`, map[string]any{"SS": []string{"a", "b"}}},
		{"number set", `{"NS":["1","2.5"]}`, map[string]any{"NS": []string{"1", "2.5"}}},
		{"binary set", `{"BS":["AQ==","Ag=="]}`, map[string]any{"BS": [][]byte{{1}, {2}}}},
		{"empty list", `{"L":[]}`, map[string]any{"L": []any{}}},
		{"empty map", `{"M":{}}`, map[string]any{"M": map[string]any{}}},
		{"nested", `{"L":[{"M":{"at":{"S":"t"},"n":{"N":"3"},"l":{"L":[{"BOOL":true},{"NULL":true}]}}},{"SS":["x"]}]}`,
			map[string]any{"L": []any{
				map[string]any{"M": map[string]any{"at": map[string]any{"S": "t"}, "n": map[string]any{"N": "3"},
					"l": map[string]any{"L": []any{map[string]any{"BOOL": true}, map[string]any{"NULL": true}}}}},
				map[string]any{"SS": []string{"x"}},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var img map[string]events.DynamoDBAttributeValue
			if err := json.Unmarshal([]byte(`{"a":`+tt.json+`}`), &img); err != nil {
				t.Fatal(err)
			}
			got, err := StreamImage(img)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]any{"a": tt.want}, plainItem(got)); diff != "" {
				t.Errorf("StreamImage (-want +got):\n%s", diff)
			}
			back, err := StreamImage(streamtest.ToStreamImage(got))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(plainItem(got), plainItem(back)); diff != "" {
				t.Errorf("StreamImage(ToStreamImage(x)) is not x (-want +got):\n%s", diff)
			}
		})
	}
	if got, err := StreamImage(nil); got != nil || err != nil {
		t.Errorf("StreamImage(nil) = %v, %v; want nil, nil (no image)", got, err)
	}
}

// A value without a type (aws-lambda-go's zero value, which panics when
// read) is an error naming where it is, not a crash.
func TestStreamImageRefusesUntypedValues(t *testing.T) {
	var zero events.DynamoDBAttributeValue
	tests := []struct {
		name string
		img  map[string]events.DynamoDBAttributeValue
		want string
	}{
		{"top level", map[string]events.DynamoDBAttributeValue{"status": zero}, "attribute status: value without a type"},
		{"in a list", map[string]events.DynamoDBAttributeValue{"history": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("x"), zero})},
			"attribute history: [1]: value without a type"},
		{"in a map", map[string]events.DynamoDBAttributeValue{"fitted": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"ref": zero})},
			"attribute fitted: attribute ref: value without a type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := StreamImage(tt.img)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("StreamImage = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The stream filters pass every change publishing's event functions turn
// into an event, and only changes to those states: checked state by
// state against the functions themselves, so a new event type that the
// filter would drop fails here.
func TestStreamFiltersFollowTheEventFunctions(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	var targets []post.TargetStatus
	for _, next := range allStatuses {
		for _, prev := range append([]post.TargetStatus{""}, allStatuses...) {
			if _, ok := publishing.TargetEvent("p", post.Target{Status: prev}, post.Target{Account: "a", Status: next, UpdatedAt: at}); ok {
				targets = append(targets, next)
				break
			}
		}
	}
	if diff := cmp.Diff(targets, eventTargetStatuses); diff != "" {
		t.Errorf("target statuses causing events (-publishing +filter):\n%s", diff)
	}
	states := []ledger.State{ledger.Pending, ledger.Unknown, ledger.Confirmed, ledger.Failed, ledger.Released, ledger.Held}
	actions := []ledger.Action{ledger.Publish, ledger.Upload, ledger.Delete}
	var gotStates []ledger.State
	var gotActions []ledger.Action
	for _, next := range states {
		for _, a := range actions {
			for _, prev := range append([]ledger.State{""}, states...) {
				if _, ok := publishing.LedgerEvent(ledger.Entry{State: prev}, ledger.Entry{Key: "k", Action: a, State: next, UpdatedAt: at}); ok {
					if !slices.Contains(gotStates, next) {
						gotStates = append(gotStates, next)
					}
					if !slices.Contains(gotActions, a) {
						gotActions = append(gotActions, a)
					}
				}
			}
		}
	}
	if diff := cmp.Diff(gotStates, eventLedgerStates); diff != "" {
		t.Errorf("ledger states causing events (-publishing +filter):\n%s", diff)
	}
	if diff := cmp.Diff(gotActions, eventLedgerActions); diff != "" {
		t.Errorf("ledger actions causing events (-publishing +filter):\n%s", diff)
	}
	var accounts []post.AccountStatus
	for _, next := range []post.AccountStatus{post.AccountOK, post.AccountReconnectNeeded} {
		if _, ok := publishing.AccountEvent(post.Account{}, post.Account{ID: "a", Status: next}, at); ok {
			accounts = append(accounts, next)
		}
	}
	if diff := cmp.Diff(accounts, eventAccountStatuses); diff != "" {
		t.Errorf("account statuses causing events (-publishing +filter):\n%s", diff)
	}

	want := map[string]string{
		PostsTable:       `{"dynamodb":{"Keys":{"item":{"S":[{"prefix":"target#"}]}},"NewImage":{"status":{"S":["published","failed","held","deleted"]}}}}`,
		LedgerTable:      `{"dynamodb":{"NewImage":{"action":{"S":["publish"]},"state":{"S":["unknown"]}}}}`,
		WorkspaceTable:   `{"dynamodb":{"Keys":{"pk":{"S":["account"]}},"NewImage":{"status":{"S":["reconnect_needed"]}}}}`,
		CredentialsTable: "",
	}
	for table, w := range want {
		if got := StreamFilter(table); got != w {
			t.Errorf("StreamFilter(%s) = %s, want %s", table, got, w)
		}
	}
}

// Changes made by the store, read back from dynalite before and after
// (the stream itself is AWS's: streamtest plays it), decode to the values
// the store holds and cause the events publishing derives; a record seen
// twice gives the same event id; changes that cause no event give none;
// a record without images is an error, not a silent skip.
func TestRecordEventsFromStoreChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t)
	clock := &fixedClock{t: t0}
	key := NewStaticKey()
	s := e.store(t, prefix, nil, Options{Now: clock.now, Keys: key})
	ctx := context.Background()
	rec := streamtest.New(e.admin, prefix+LedgerTable, prefix+PostsTable, prefix+WorkspaceTable)
	rec.Now = clock.now
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	change := func(t *testing.T, do func() error) []events.DynamoDBEventRecord {
		t.Helper()
		if err := do(); err != nil {
			t.Fatal(err)
		}
		recs, err := rec.Changes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	eventsOf := func(t *testing.T, recs []events.DynamoDBEventRecord) []publishing.Event {
		t.Helper()
		var out []publishing.Event
		for _, r := range recs {
			ev, ok, err := RecordEvent(r)
			if err != nil {
				t.Fatalf("RecordEvent(%s %s): %v", r.EventName, r.EventSourceArn, err)
			}
			if ok {
				out = append(out, ev)
			}
		}
		return out
	}
	slot := t0.Add(time.Hour)
	p := post.Post{ID: "p-stream", Body: "hello", CreatedAt: t0, Targets: []post.Target{
		{Account: "acct-a", Slot: slot, Status: post.Scheduled, UpdatedAt: t0},
		{Account: "acct-b", Slot: slot, Status: post.Scheduled, UpdatedAt: t0},
	}}

	// Creating a post (post item and targets, scheduled) causes nothing.
	recs := change(t, func() error { return s.CreatePost(ctx, p) })
	if len(recs) != 3 {
		t.Fatalf("CreatePost: %d records, want 3 (post item, two targets)", len(recs))
	}
	if evs := eventsOf(t, recs); len(evs) != 0 {
		t.Errorf("CreatePost caused %+v, want nothing", evs)
	}
	// The target's decoded states are the store's.
	at := t0.Add(time.Hour + 3*time.Second)
	recs = change(t, func() error {
		_, err := s.UpdateTarget(ctx, p.ID, "acct-a", post.TargetUpdate{Status: post.Published, From: []post.TargetStatus{post.Scheduled}, RemoteID: "remote-1", At: at})
		return err
	})
	if len(recs) != 1 {
		t.Fatalf("UpdateTarget: %d records, want 1", len(recs))
	}
	id, prev, next, ok, err := TargetChange(recs[0])
	if err != nil || !ok {
		t.Fatalf("TargetChange = %v, %v", ok, err)
	}
	stored, err := s.GetPost(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Targets[0], prev); diff != "" || id != p.ID {
		t.Errorf("old image: post %s (-want +got):\n%s", id, diff)
	}
	if diff := cmp.Diff(stored.Targets[0], next); diff != "" {
		t.Errorf("new image (-GetPost +decoded):\n%s", diff)
	}
	evs := eventsOf(t, recs)
	want := []publishing.Event{{
		ID: evs0ID(evs), Type: publishing.EventPublished, At: at, Post: p.ID, Account: "acct-a", Slot: slot,
		Status: string(post.Published), RemoteID: "remote-1",
	}}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	// Seen twice (the stream redelivers), the same event and id.
	if again := eventsOf(t, recs); !cmp.Equal(evs, again) {
		t.Errorf("the same record gave %+v, then %+v", evs, again)
	}
	wantID, _ := publishing.TargetEvent(p.ID, p.Targets[0], stored.Targets[0])
	if evs[0].ID != wantID.ID {
		t.Errorf("event id %s, want publishing.TargetEvent's %s", evs[0].ID, wantID.ID)
	}

	// A ledger entry that becomes unknown: post.unknown.
	lkey := ledger.PublishKey("acct-b", string(p.ID), slot)
	entry := ledger.NewEntry(lkey, ledger.Publish, "acct-b", string(p.ID), slot, "fp", "worker", t0, time.Minute)
	entry.Post = string(p.ID)
	if evs := eventsOf(t, change(t, func() error { return s.Create(ctx, entry) })); len(evs) != 0 {
		t.Errorf("a pending entry caused %+v", evs)
	}
	unknown, err := entry.MarkUnknown("timeout after send", t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	evs = eventsOf(t, change(t, func() error { return s.Update(ctx, entry, unknown) }))
	wantUnknown, _ := publishing.LedgerEvent(entry, unknown)
	if diff := cmp.Diff([]publishing.Event{wantUnknown}, evs); diff != "" {
		t.Errorf("unknown (-want +got):\n%s", diff)
	}

	// An account that needs reconnecting: account.reconnect_needed at the
	// time PutAccount wrote it.
	acc := post.Account{ID: "acct-b", Platform: "mastodon", Handle: "@b", BaseURL: "https://b.example", Gate: post.GateAuto}
	if evs := eventsOf(t, change(t, func() error { return s.PutAccount(ctx, acc) })); len(evs) != 0 {
		t.Errorf("a new account caused %+v", evs)
	}
	clock.add(90 * time.Second)
	acc2 := acc
	acc2.Status, acc2.StatusReason = post.AccountReconnectNeeded, "refresh refused: invalid_grant"
	evs = eventsOf(t, change(t, func() error { return s.PutAccount(ctx, acc2) }))
	wantAcc, _ := publishing.AccountEvent(acc, acc2, clock.now())
	if diff := cmp.Diff([]publishing.Event{wantAcc}, evs); diff != "" {
		t.Errorf("reconnect needed (-want +got):\n%s", diff)
	}

	// Other workspace items (a subscription, the data key, a budget)
	// cause nothing.
	if evs := eventsOf(t, change(t, func() error {
		return s.AddSubscription(ctx, publishing.Subscription{ID: "wh_1", URL: "https://r.example/h", Secret: "whsec_x", CreatedAt: t0})
	})); len(evs) != 0 {
		t.Errorf("a subscription caused %+v", evs)
	}

	// A record without images (a KEYS_ONLY stream) is an error.
	keysOnly := recs[0]
	keysOnly.Change.OldImage, keysOnly.Change.NewImage, keysOnly.Change.StreamViewType = nil, nil, "KEYS_ONLY"
	if _, _, err := RecordEvent(keysOnly); !errors.Is(err, ErrNoImages) {
		t.Errorf("RecordEvent of a keys-only record = %v, want ErrNoImages", err)
	}
	// An image that does not decode is an error naming the item.
	bad := recs[0]
	bad.Change.NewImage = map[string]events.DynamoDBAttributeValue{"post": events.NewStringAttribute("p"), "item": events.NewStringAttribute("target#acct-a"),
		"status": events.NewStringAttribute("published"), "updated_at": events.NewStringAttribute("yesterday")}
	if _, _, err := RecordEvent(bad); err == nil || !strings.Contains(err.Error(), "target#acct-a") || !strings.Contains(err.Error(), "updated_at") {
		t.Errorf("RecordEvent of a bad image = %v, want an error naming the item and attribute", err)
	}
}

func evs0ID(evs []publishing.Event) string {
	if len(evs) == 0 {
		return ""
	}
	return evs[0].ID
}
