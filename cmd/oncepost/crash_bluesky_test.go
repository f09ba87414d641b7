package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/localpds"
	"oncepost/shared/pdstest"
	"oncepost/shared/platform"
	"oncepost/shared/platform/bluesky"
	"oncepost/shared/post"
)

// The thread's crash test on the Bluesky reference PDS: the 4-part
// thread of TestCrashAtEveryStepBoundary, its part 2's putRecord answer
// lost after the PDS committed it (a proxy in front of the PDS hangs up),
// and the process killed right after each part's create, before its
// outcome is recorded (part 3's is the case); a second process
// finishes. The PDS's own records must hold every part once, in order,
// each a reply whose parent is the part before and whose root is part 1
// (URIs and CIDs). A smaller scenario than the sandbox's: the thread
// alone, killed at each of its step boundaries in turn (right after part
// 3's create among them).
func TestThreadCrashOnBlueskyPDS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline against the reference PDS")
	}
	requirePDS(t)
	pds := pdstest.Start(t)
	clean := runPDSThreadScenario(t, pds, "clean", 0)
	if clean.problem != "" {
		t.Fatalf("no crash: %s", clean.problem)
	}
	for k := 1; k <= 4; k++ {
		if point := fmt.Sprintf("after platform create (thread part %d)", k); !containsName(clean.names, point) {
			t.Fatalf("the clean run never passed %q; boundaries: %q", point, clean.names)
		}
	}
	t.Logf("%d step boundaries", len(clean.names))
	for k := 1; k <= len(clean.names); k++ {
		t.Run(fmt.Sprintf("boundary-%02d", k), func(t *testing.T) {
			t.Parallel()
			r := runPDSThreadScenario(t, pds, fmt.Sprintf("b%02d", k), k)
			switch {
			case !r.crashed:
				t.Fatalf("the run never reached boundary %d", k)
			case r.problem != "":
				t.Errorf("killed at boundary %d (%s): %s", k, r.crashPoint, r.problem)
			}
		})
	}
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// losePart2 is a proxy in front of the PDS that lets the first putRecord
// of part 2's text reach the PDS and commit, then hangs up on the client.
type losePart2 struct {
	upstream string
	text     string
	dropped  atomic.Bool
}

func (p *losePart2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	lose := false
	if strings.HasSuffix(r.URL.Path, "/com.atproto.repo.putRecord") {
		var in struct {
			Record struct {
				Text string `json:"text"`
			} `json:"record"`
		}
		_ = json.Unmarshal(body, &in)
		lose = in.Record.Text == p.text && p.dropped.CompareAndSwap(false, true)
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if lose {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// runPDSThreadScenario publishes the thread to a new account of pds
// (named after name) through the embedded runtime, killing the first
// process at boundary at (0: never), and checks the PDS's records.
func runPDSThreadScenario(t *testing.T, pds *pdstest.PDS, name string, at int) crashResult {
	t.Helper()
	ctx := context.Background()
	proxy := &losePart2{upstream: pds.URL, text: crashThread[1]}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	a := pds.CreateAccount(t, "thread-"+name+".test", "pw-thread-"+name)

	clock := clocktest.New(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	w := &crashWorld{dir: t.TempDir(), clock: clock, platforms: bluesky.Connector{}, parts: map[string]string{}}
	for i, text := range crashThread {
		w.parts[text] = fmt.Sprintf("thread part %d", i+1)
	}
	if err := os.MkdirAll(filepath.Join(w.dir, "media"), 0o700); err != nil {
		t.Fatal(err)
	}
	acc := post.Account{ID: "sky", Platform: "bluesky", Handle: "@" + a.Handle, BaseURL: srv.URL, RemoteID: a.DID, CredentialRef: "sky", Gate: post.GateAuto}
	slot := clock.Now().Add(time.Second)
	w.posts = []post.Post{{ID: "sky-thread", Body: crashThread[0], Thread: crashThread[1:], CreatedAt: clock.Now(),
		Targets: []post.Target{{Account: acc.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: clock.Now()}}}}
	rt := w.open(t, "setup", &crasher{})
	if err := rt.store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := rt.store.PutCredential(ctx, acc.ID, platform.Credential{AccessToken: a.AccessJWT, RefreshToken: a.RefreshJWT}); err != nil {
		t.Fatal(err)
	}
	if err := rt.createPost(ctx, w.posts[0]); err != nil {
		t.Fatal(err)
	}
	rt.Close()

	c := &crasher{at: at, record: at == 0}
	finished := w.runProcess(t, "first", c)
	res := crashResult{boundaries: c.n, crashed: c.crashed, crashPoint: c.point, names: c.names}
	var problems []string
	if !finished && !c.crashed {
		problems = append(problems, "the first process neither finished nor crashed")
	}
	if c.crashed && !w.runProcess(t, "second", &crasher{}) {
		problems = append(problems, "the second process did not settle the thread")
	}
	if !proxy.dropped.Load() {
		problems = append(problems, "part 2's answer was never lost")
	}
	check := w.open(t, "check", &crasher{})
	defer check.Close()
	got, err := check.store.GetPost(ctx, "sky-thread")
	if err != nil {
		t.Fatal(err)
	}
	records, err := pds.Posts(ctx, a.DID)
	if err != nil {
		t.Fatal(err)
	}
	problems = append(problems, checkPDSThread(got, got.Targets[0], records)...)
	res.problem = strings.Join(problems, "; ")
	return res
}

// checkPDSThread checks the thread against the PDS's records: each part
// once; part 1 no reply; part k's reply parent part k-1 and root part 1,
// by URI and CID; the target published under part 1's URI.
func checkPDSThread(p post.Post, tg post.Target, records []localpds.Record) []string {
	type ref struct{ URI, CID string }
	type value struct {
		Text  string `json:"text"`
		Reply *struct {
			Root, Parent ref
		} `json:"reply"`
	}
	byText := map[string][]localpds.Record{}
	values := map[string]value{}
	for _, r := range records {
		var v value
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return []string{fmt.Sprintf("record %s: %v", r.URI, err)}
		}
		byText[v.Text] = append(byText[v.Text], r)
		values[r.URI] = v
	}
	var problems []string
	texts := append([]string{p.Body}, p.Thread...)
	var refs []ref
	for k, text := range texts {
		rs := byText[text]
		if len(rs) != 1 {
			problems = append(problems, fmt.Sprintf("part %d is on the PDS %d times", k+1, len(rs)))
			return problems
		}
		r, v := rs[0], values[rs[0].URI]
		switch {
		case k == 0 && v.Reply != nil:
			problems = append(problems, "part 1 is a reply")
		case k > 0 && v.Reply == nil:
			problems = append(problems, fmt.Sprintf("part %d is no reply", k+1))
		case k > 0 && (v.Reply.Parent != refs[k-1] || v.Reply.Root != refs[0]):
			problems = append(problems, fmt.Sprintf("part %d replies to %+v in %+v, want parent %+v and root %+v", k+1, v.Reply.Parent, v.Reply.Root, refs[k-1], refs[0]))
		}
		refs = append(refs, ref{URI: r.URI, CID: r.CID})
	}
	if tg.Status != post.Published || tg.RemoteID != refs[0].URI {
		problems = append(problems, fmt.Sprintf("the target is %s as %q (%s), want published as part 1's %s", tg.Status, tg.RemoteID, tg.Reason, refs[0].URI))
	}
	return problems
}
