package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/webhook"
)

// receiver is a webhook receiver on a fixed 127.0.0.1 port that can be
// down (nothing listens) and up again on the same port.
type receiver struct {
	addr   string
	secret string
	mu     sync.Mutex
	got    map[string]int // webhook-id → deliveries received
	bad    []string       // what failed verification
	srv    *http.Server
}

// freeAddr is a 127.0.0.1 address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func (r *receiver) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve)}
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
}

// serve checks a delivery as a receiver would (the signature over the
// exact bytes, the id in the body) and counts it by webhook-id.
func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	var env struct {
		Type string           `json:"type"`
		Data publishing.Event `json:"data"`
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	unix, err := strconv.ParseInt(ts, 10, 64)
	want, serr := webhook.Sign(r.secret, id, time.Unix(unix, 0), body)
	switch {
	case err != nil || serr != nil:
		r.bad = append(r.bad, "timestamp or signing: "+ts)
	case !strings.Contains(" "+req.Header.Get("webhook-signature")+" ", " "+want+" "):
		r.bad = append(r.bad, "signature of "+id)
	case json.Unmarshal(body, &env) != nil || env.Data.ID != id:
		r.bad = append(r.bad, "body of "+id+": "+string(body))
	}
	r.got[id]++
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) ids() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// A receiver that is down while posts go out, and a runtime killed with
// SIGKILL before it could deliver anything, lose no event: the events were
// recorded with the posts' changes, and the restarted runtime delivers
// every one (each once, signed, under the id the change gave it).
func TestWebhooksSurviveReceiverDownAndSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts runtime processes")
	}
	w := newWorkspace(t, sandbox.Options{}, 2)
	rcv := &receiver{addr: freeAddr(t), got: map[string]int{}}
	var out, errOut bytes.Buffer
	args := []string{"webhook", "add", "--db", w.db, "--url", "http://" + rcv.addr + "/hooks", "--allow-private", "--events", "post.published", "--json"}
	if code := runCLI(context.Background(), args, &out, &errOut); code != exitOK {
		t.Fatalf("webhook add: exit %d: %s%s", code, out.String(), errOut.String())
	}
	var added struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(out.Bytes(), &added); err != nil || !strings.HasPrefix(added.Secret, "whsec_") {
		t.Fatalf("webhook add --json = %s (%v); want the subscription and its secret", out.String(), err)
	}
	rcv.secret = added.Secret

	const n = 6
	w.addPosts(t, n, time.Now().UTC().Add(time.Second).Truncate(time.Second))
	logs, err := os.Create(filepath.Join(w.dir, "run1.log"))
	if err != nil {
		t.Fatal(err)
	}
	first := oncepostCmd(t, runtimeArgs(w.db)...)
	first.Stdout, first.Stderr = logs, logs
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	store := w.open(t)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Every post out, and every delivery tried at least once (the
	// receiver refused the connection): then the process dies.
	tried := waitUntil(ctx, 20*time.Millisecond, func() bool {
		ds, err := store.ListDeliveries(ctx, publishing.DeliveryPending, 0)
		if err != nil || len(ds) < n {
			return false
		}
		for _, d := range ds {
			if d.Attempts == 0 {
				return false
			}
		}
		return true
	})
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	if !tried {
		raw, _ := os.ReadFile(logs.Name())
		t.Fatalf("not every post was published and tried within 30 s; the log:\n%s", tail(raw, 3000))
	}
	pending, err := store.ListDeliveries(ctx, publishing.DeliveryPending, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := map[string]bool{}
	for _, d := range pending {
		wantIDs[d.Event.ID] = true
		if d.LastError == "" {
			t.Errorf("delivery %s: tried %d times with the receiver down, but no error recorded", d.ID, d.Attempts)
		}
	}
	if len(wantIDs) != n {
		t.Fatalf("%d distinct events pending after the kill, want %d (one per published target)", len(wantIDs), n)
	}
	if got := rcv.ids(); len(got) != 0 {
		t.Fatalf("the receiver was down but counted %v", got)
	}

	rcv.up(t)
	second := oncepostCmd(t, runtimeArgs(w.db)...)
	logs2, _ := os.Create(filepath.Join(w.dir, "run2.log"))
	second.Stdout, second.Stderr = logs2, logs2
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		second.Process.Signal(syscall.SIGTERM)
		waitExit(second, 10*time.Second)
	}()
	// The second attempt is due 5 s after the first (the retry schedule).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	all := waitUntil(ctx2, 50*time.Millisecond, func() bool {
		ds, err := store.ListDeliveries(ctx2, publishing.DeliveryDelivered, 0)
		return err == nil && len(ds) == n
	})
	got := rcv.ids()
	if !all {
		raw, _ := os.ReadFile(logs2.Name())
		t.Fatalf("after the restart the receiver got %d of %d events in 30 s; the log:\n%s", len(got), n, tail(raw, 3000))
	}
	for id := range wantIDs {
		if got[id] != 1 {
			t.Errorf("event %s received %d times, want once", id, got[id])
		}
	}
	if len(got) != n {
		t.Errorf("received %d distinct events, want %d: %v", len(got), n, got)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Errorf("deliveries that fail a receiver's checks: %q", rcv.bad)
	}
}

// The webhook commands refuse bad input naming the flag, and show the
// secret once: list never prints it.
func TestWebhookCommands(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := runCLI(context.Background(), append(args, "--db", w.db), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"webhook", "add"}, "--url: is missing"},
		{[]string{"webhook", "add", "--url", "http://example.com/h"}, "--url"},
		{[]string{"webhook", "add", "--url", "https://169.254.169.254/latest"}, "link-local"},
		{[]string{"webhook", "add", "--url", "https://10.0.0.1/h"}, "--url"},
		{[]string{"webhook", "add", "--url", "https://example.com/h", "--events", "post.exploded"}, `--events: "post.exploded" is not an event type`},
		{[]string{"webhook", "add", "--url", "https://example.com/h", "--description", strings.Repeat("x", 501)}, "--description: is 501 bytes"},
		{[]string{"webhook", "deliveries", "--state", "lost"}, "--state"},
		{[]string{"webhook", "remove", "wh_nope"}, `no webhook subscription "wh_nope"`},
		{[]string{"webhook", "redrive", "evt_x/wh_y"}, `no delivery "evt_x/wh_y"`},
	} {
		if code, out := run(tc.args...); code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("oncepost %q: exit %d, %q; want exit %d mentioning %q", tc.args, code, out, exitUsage, tc.want)
		}
	}
	code, out := run("webhook", "add", "--url", "https://hooks.example.com/oncepost", "--events", "post.failed,post.held")
	if code != exitOK || !strings.Contains(out, "whsec_") {
		t.Fatalf("webhook add = %d %q; want the secret shown", code, out)
	}
	secret := out[strings.Index(out, "whsec_"):]
	secret = strings.TrimSpace(secret)
	code, list := run("webhook", "list", "--json")
	var subs []publishing.Subscription
	if code != exitOK || json.Unmarshal([]byte(list), &subs) != nil || len(subs) != 1 {
		t.Fatalf("webhook list --json = %d %q; want one subscription", code, list)
	}
	if strings.Contains(list, secret) || strings.Contains(list, "whsec_") {
		t.Errorf("webhook list shows the secret: %q", list)
	}
	if want := []publishing.EventType{publishing.EventFailed, publishing.EventHeld}; len(subs[0].Events) != 2 || subs[0].Events[0] != want[0] || subs[0].Events[1] != want[1] {
		t.Errorf("events = %v, want %v", subs[0].Events, want)
	}
	if code, out := run("webhook", "remove", subs[0].ID); code != exitOK {
		t.Errorf("webhook remove = %d %q", code, out)
	}
	store := w.open(t)
	defer store.Close()
	if _, err := store.GetSubscription(context.Background(), subs[0].ID); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("subscription after remove: %v, want not found", err)
	}
}
