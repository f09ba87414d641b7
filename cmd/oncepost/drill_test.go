package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color/palette"
	"image/draw"
	stdgif "image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/localflow"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// The edges an independent drill found on one machine (no duplicate, no
// loss: what an operator sees around them).

// publishAmbiguously sends a post whose create commits after the client
// gave up, and runs its confirm workflow until the look finds it.
func publishAmbiguously(t *testing.T, f *flowFixture, id string) publishing.Job {
	t.Helper()
	f.ws.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 200 * time.Millisecond})
	job := f.due(id, "Storm warning for "+id+".")
	if out := f.publish(job); out.Result != publishing.Confirming {
		t.Fatalf("first send = %+v, want confirming", out)
	}
	if tg := f.target(job); tg.Status != post.Publishing || tg.Reason == "" {
		t.Fatalf("target after the ambiguous send: %s %q, want publishing with the reason", tg.Status, tg.Reason)
	}
	f.waitCommitted(1)
	name := publishing.ConfirmName(f.entry(job).Key, 1)
	for step := 0; step < 5 && f.describe(name).Status == localflow.StatusRunning; step++ {
		f.clock.Advance(time.Second)
		f.runDue()
	}
	if ex := f.describe(name); ex.Status != localflow.StatusSucceeded {
		t.Fatalf("workflow %s in state %s (%s: %s)", ex.Status, ex.State, ex.Error, ex.Cause)
	}
	return job
}

// A target that went publishing (ambiguous) and then published does not
// keep the ambiguous episode's reason: the reason explains failed, held
// and waiting, and an operator reading "published: timeout after the
// request was written" would look for a problem that is gone.
func TestPublishedAfterAmbiguousKeepsNoReason(t *testing.T) {
	f := newFlowFixture(t, post.GateAuto, false)
	job := publishAmbiguously(t, f, "p1")
	tg := f.target(job)
	if tg.Status != post.Published || tg.Reason != "" {
		t.Errorf("target %s with reason %q, want published without a reason", tg.Status, tg.Reason)
	}
}

// No JSON output prints the zero time (0001-01-01T00:00:00Z) for a time
// that is not there: a target's next try, an entry's lease, retry or
// deferral.
func TestJSONOutputsShowNoZeroTime(t *testing.T) {
	f := newFlowFixture(t, post.GateAuto, false)
	job := publishAmbiguously(t, f, "p1")
	later := f.clock.Now().Add(time.Hour)
	if err := f.rt.store.CreatePost(context.Background(), post.Post{ID: "p2", Body: "Later.", CreatedAt: f.clock.Now(),
		Targets: []post.Target{{Account: job.Account, Slot: later, Status: post.Scheduled, UpdatedAt: f.clock.Now()}}}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"post", "list", "--json"},
		{"post", "show", "p1", "--json"},
		{"post", "show", "p2", "--json"},
		{"status", "--json"},
		{"held", "--json"},
		{"dlq", "list", "--json"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runCLI(context.Background(), append(args, "--db", f.ws.db), &stdout, &stderr); code != exitOK {
			t.Fatalf("oncepost %s: exit %d, %s", strings.Join(args, " "), code, stderr.String())
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			if strings.Contains(line, "0001-01-01") {
				t.Errorf("oncepost %s prints a zero time: %s", strings.Join(args, " "), strings.TrimSpace(line))
			}
		}
	}
}

// `oncepost sandbox --no-idempotency` turns the sandbox's Idempotency-Key
// support off, so a drill can check that the ledger alone holds: the same
// key sent twice makes two statuses. Without the flag it makes one.
func TestSandboxIdempotencySwitch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  int
	}{
		{"keys honoured", nil, 1},
		{"--no-idempotency", []string{"--no-idempotency"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := startSandboxProcessWith(t, t.TempDir(), tc.flags, "drill")
			tok, err := os.ReadFile(sp.TokenFiles["drill"])
			if err != nil {
				t.Fatal(err)
			}
			call := func(method, path, body string) []byte {
				req, _ := http.NewRequest(method, sp.URL+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Idempotency-Key", "drill-key-1")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s %s: %s %s", method, path, resp.Status, raw)
				}
				return raw
			}
			for range 2 {
				call(http.MethodPost, "/api/v1/statuses", "status=Same+key+twice.")
			}
			var statuses []json.RawMessage
			if err := json.Unmarshal(call(http.MethodGet, "/api/v1/accounts/"+sp.AccountIDs["drill"]+"/statuses", ""), &statuses); err != nil {
				t.Fatal(err)
			}
			if len(statuses) != tc.want {
				t.Errorf("two creates with one Idempotency-Key made %d statuses, want %d", len(statuses), tc.want)
			}
		})
	}
}

// `chaos --naive --db FILE` keeps the naive run in a workspace, as the
// drill through the ledger does: its accounts and one post per round,
// published with the remote id of its first copy or failed when no copy
// landed, and no ledger rows (the naive template keeps none). An existing
// file is refused, as for the ledger drill.
func TestChaosNaiveKeepsItsDB(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the drill")
	}
	db := filepath.Join(t.TempDir(), "naive.db")
	got, _, line := runChaos(t, "--naive", "--rounds", "60", "--db", db)
	s, err := sqlitestore.Open(context.Background(), db, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("chaos --naive --db did not keep %s (%s): %v", db, line, err)
	}
	defer s.Close()
	sum, err := s.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Targets[post.Published] != got["published"] || sum.Targets[post.Failed] != got["lost"] ||
		sum.Targets[post.Published]+sum.Targets[post.Failed] != 60 || len(sum.Ledger) != 0 {
		t.Errorf("workspace after %s: targets %v, ledger %v; want the line's published and lost, no ledger rows", line, sum.Targets, sum.Ledger)
	}
	accounts, err := s.ListAccounts(context.Background())
	if err != nil || len(accounts) != 1 || accounts[0].ID != "naive00" {
		t.Errorf("accounts %v, %v; want naive00", accounts, err)
	}
	var stdout, stderr bytes.Buffer
	if code := runCLI(context.Background(), []string{"chaos", "--naive", "--rounds", "1", "--db", db}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--db") {
		t.Errorf("chaos --naive with an existing --db: exit %d, %s; want the flag refused", code, stderr.String())
	}
}

// account add refuses a secret file that group or others may read (or
// write), saying chmod 600, before any call to the platform: nothing is
// stored. Stdin is not a file and is read as it is.
func TestAccountAddRefusesAnOpenSecretFile(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	acct := sb.AddAccount("news")
	dir := t.TempDir()
	db := filepath.Join(dir, "oncepost.db")
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name  string
		field string
		args  []string
	}{
		{"mastodon token 0644", "--token-file", []string{"--id", "news", "--url", sb.URL(), "--token-file", file("news.token", acct.AccessToken+"\n", 0o644)}},
		{"mastodon token 0640", "--token-file", []string{"--id", "news", "--url", sb.URL(), "--token-file", file("news-g.token", acct.AccessToken+"\n", 0o640)}},
		{"mastodon token 0602", "--token-file", []string{"--id", "news", "--url", sb.URL(), "--token-file", file("news-w.token", acct.AccessToken+"\n", 0o602)}},
		{"bluesky app password", "--password-file", []string{"--id", "sky", "--platform", "bluesky", "--handle", "news.test", "--api-url", "http://127.0.0.1:1",
			"--password-file", file("sky.password", "abcd-efgh-ijkl-mnop\n", 0o644)}},
		{"discord webhook", "--webhook-file", []string{"--id", "hook", "--platform", "discord-webhook", "--api-url", "http://127.0.0.1:1",
			"--webhook-file", file("hook.url", "http://127.0.0.1:1/api/webhooks/1/secret\n", 0o604)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runCLI(context.Background(), append([]string{"account", "add", "--db", db}, tt.args...), &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != exitUsage || !strings.Contains(out, tt.field) || !strings.Contains(out, "chmod 600") {
				t.Errorf("exit %d, %q; want exit %d naming %s and saying chmod 600", code, out, exitUsage, tt.field)
			}
			if _, err := os.Stat(db); err == nil {
				t.Errorf("the refused file left a workspace behind")
			}
		})
	}
	// The same token from a 0600 file is taken.
	var stdout, stderr bytes.Buffer
	if code := runCLI(context.Background(), []string{"account", "add", "--db", db, "--id", "news", "--url", sb.URL(),
		"--token-file", file("ok.token", acct.AccessToken+"\n", 0o600)}, &stdout, &stderr); code != exitOK {
		t.Errorf("a 0600 token file: exit %d, %s", code, stderr.String())
	}
}

// account add refuses to connect a remote account (same platform,
// instance and remote id) already connected under another id, naming that
// id: two ids for one remote account would send a post twice to it (one
// ledger entry per id). Reconnecting the same id with --replace stays
// allowed.
func TestAccountAddRefusesARemoteAccountConnectedTwice(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	acct := sb.AddAccount("news")
	dir := t.TempDir()
	db := filepath.Join(dir, "oncepost.db")
	token := filepath.Join(dir, "news.token")
	if err := os.WriteFile(token, []byte(acct.AccessToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), append([]string{"account", "add", "--db", db, "--url", sb.URL(), "--token-file", token}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := run("--id", "news"); code != exitOK {
		t.Fatalf("first add: exit %d, %s", code, out)
	}
	code, out := run("--id", "news-again")
	if code != exitUsage || !strings.Contains(out, `"news"`) {
		t.Errorf("second id for the same remote account: exit %d, %q; want exit %d naming news", code, out, exitUsage)
	}
	s, err := sqlitestore.Open(context.Background(), db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := s.ListAccounts(context.Background())
	s.Close()
	if err != nil || len(accounts) != 1 {
		t.Errorf("accounts after the refusal: %v, %v; want news alone", accounts, err)
	}
	if code, out := run("--id", "news", "--replace"); code != exitOK {
		t.Errorf("reconnecting news with --replace: exit %d, %s", code, out)
	}
}

// post add decodes every image fully: a file whose header is whole but
// whose data is cut or damaged (a download that stopped, a copy that
// failed) is refused naming media[i], and nothing is stored. Before, only
// the header was read, and the platform refused the upload at the slot.
func TestPostAddRefusesATruncatedImage(t *testing.T) {
	sb := sandbox.New(sandbox.Options{})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	sa := sb.AddAccount("news")
	dir := t.TempDir()
	db := filepath.Join(dir, "oncepost.db")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), append(args, "--db", db), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := run("account", "add", "--id", "news", "--url", sb.URL(), "--token-file", write("token", []byte(sa.AccessToken))); code != exitOK {
		t.Fatalf("account add: %d %s", code, out)
	}
	noise := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range noise.Pix {
		noise.Pix[i] = uint8(rng.IntN(256))
	}
	var pngData, jpegData, gifData bytes.Buffer
	if err := png.Encode(&pngData, noise); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpegData, noise, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	anim := &stdgif.GIF{}
	for range 3 {
		frame := image.NewPaletted(noise.Bounds(), palette.Plan9)
		draw.Draw(frame, frame.Bounds(), noise, image.Point{}, draw.Src)
		anim.Image, anim.Delay = append(anim.Image, frame), append(anim.Delay, 10)
	}
	if err := stdgif.EncodeAll(&gifData, anim); err != nil {
		t.Fatal(err)
	}
	cut := func(b []byte, n int) []byte { return b[:n] }
	damaged := bytes.Clone(pngData.Bytes())
	damaged[len(damaged)/2] ^= 0xff
	whole := write("whole.png", pngData.Bytes())
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"png cut short", cut(pngData.Bytes(), pngData.Len()*2/3)},
		{"png without its end", cut(pngData.Bytes(), pngData.Len()-12)},
		{"png with a damaged byte", damaged},
		{"jpeg cut short", cut(jpegData.Bytes(), jpegData.Len()*2/3)},
		{"gif cut in its last frame", cut(gifData.Bytes(), gifData.Len()-40)},
		{"gif without its trailer", cut(gifData.Bytes(), gifData.Len()-1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := write(strings.ReplaceAll(tt.name, " ", "-"), tt.data)
			code, out := run("post", "add", "--id", "p", "--account", "news", "--at", future, "--body", "Two pictures.", "--media", whole, "--media", bad)
			if code != exitUsage || !strings.Contains(out, "media[1]") {
				t.Errorf("exit %d, %q; want exit %d naming media[1]", code, out, exitUsage)
			}
		})
	}
	// The whole files are taken, and nothing was stored by the refusals.
	for _, f := range []string{whole, write("whole.jpg", jpegData.Bytes()), write("whole.gif", gifData.Bytes())} {
		if code, out := run("post", "add", "--account", "news", "--at", future, "--body", "One picture.", "--media", f); code != exitOK {
			t.Errorf("post add --media %s: exit %d, %s", filepath.Base(f), code, out)
		}
	}
	if code, out := run("post", "show", "p"); code != exitUsage {
		t.Errorf("post show p after the refusals: exit %d, %s; want no such post", code, out)
	}
}

// status shows the publish queue's depth: visible, in flight, delayed,
// undecodable (which the next receive dead-letters) and dead letters. A
// row whose visible_at cannot be read was shown nowhere before.
func TestStatusShowsTheQueue(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger = w.db, discardLogger()
	rt, err := openRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, delay := range []time.Duration{0, 0, 0, time.Hour} {
		if _, err := rt.queue.Send(ctx, []byte(`{}`), delay); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := rt.queue.Receive(ctx, 1, time.Hour)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %d, %v", len(msgs), err)
	}
	bad, err := rt.queue.Send(ctx, []byte(`{}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.store.DB().Exec(`UPDATE queue_messages SET visible_at = 'tomorrow' WHERE id = ?`, bad); err != nil {
		t.Fatal(err)
	}
	rt.Close()

	var stdout, stderr bytes.Buffer
	if code := runCLI(ctx, []string{"status", "--db", w.db, "--json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status: exit %d, %s", code, stderr.String())
	}
	var rep struct {
		Queue map[string]int `json:"queue"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"visible": 2, "in_flight": 1, "delayed": 1, "undecodable": 1, "dead_letters": 0}
	if d := cmp.Diff(want, rep.Queue); d != "" {
		t.Errorf("status --json queue (-want +got):\n%s", d)
	}
	stdout.Reset()
	if code := runCLI(ctx, []string{"status", "--db", w.db}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status: exit %d, %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "queue: 2 visible, 1 in flight, 1 delayed, 0 dead letters; 1 undecodable") {
		t.Errorf("status does not show the queue:\n%s", stdout.String())
	}
}

// post list says when a listing is cut and pages it: text output prints
// the command for the next page on stderr, JSON has a "next" cursor, and
// following the cursors lists every post once.
func TestPostListSaysWhenItIsCut(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	w.addPosts(t, 105, time.Now().Add(time.Hour).UTC().Truncate(time.Second))
	run := func(args ...string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := runCLI(context.Background(), append(args, "--db", w.db), &stdout, &stderr); code != exitOK {
			t.Fatalf("oncepost %s: exit %d, %s", strings.Join(args, " "), code, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	out, errOut := run("post", "list")
	if rows := strings.Count(out, "\n") - 1; rows != 100 {
		t.Errorf("post list printed %d rows, want the first 100", rows)
	}
	_, cursor, found := strings.Cut(errOut, "--after ")
	if !found || !strings.Contains(errOut, "more posts") {
		t.Fatalf("post list of 105 posts said nothing about the 5 left; stderr %q", errOut)
	}
	cursor = strings.Fields(cursor)[0]
	out, errOut = run("post", "list", "--after", cursor)
	if rows := strings.Count(out, "\n") - 1; rows != 5 || errOut != "" {
		t.Errorf("the next page: %d rows, stderr %q; want the 5 left and nothing more", rows, errOut)
	}

	// JSON: the posts and the next page's cursor, until there is none.
	seen := map[post.ID]bool{}
	after := ""
	for page := 1; page <= 30; page++ {
		args := []string{"post", "list", "--json", "--limit", "40"}
		if after != "" {
			args = append(args, "--after", after)
		}
		out, _ := run(args...)
		var pg struct {
			Posts []post.Post `json:"posts"`
			Next  string      `json:"next"`
		}
		if err := json.Unmarshal([]byte(out), &pg); err != nil {
			t.Fatalf("post list --json: %v\n%s", err, out)
		}
		for _, p := range pg.Posts {
			if seen[p.ID] {
				t.Errorf("post %s listed twice", p.ID)
			}
			seen[p.ID] = true
		}
		if pg.Next == "" {
			break
		}
		after = pg.Next
	}
	if len(seen) != 105 {
		t.Errorf("the pages listed %d posts, want 105", len(seen))
	}
	var stdout, stderr bytes.Buffer
	if code := runCLI(context.Background(), []string{"post", "list", "--db", w.db, "--after", "not-a-cursor"}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--after") {
		t.Errorf("a bad cursor: exit %d, %q; want exit %d naming --after", code, stderr.String(), exitUsage)
	}
}
