package sqlitestore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// The two-process test: the test binary runs itself as helper processes
// that race the parent on one file. Each participant tries to Create the
// same keys, then to move each from pending to unknown, then to trigger
// the same targets (from scheduled only), then drains a shared queue in
// which one message cannot be decoded; exactly one Create, one Update and
// one trigger per key or target must win across all processes, every good
// message must be received exactly once and the bad one dead-lettered.
const (
	helperEnvPath = "SQLITESTORE_HELPER_DB"
	helperEnvName = "SQLITESTORE_HELPER_NAME"
	// helperEnvMode "key" makes the helper open a new store and store one
	// credential (TestKeyAcrossProcesses) instead of racing on the ledger.
	helperEnvMode = "SQLITESTORE_HELPER_MODE"
	raceKeys      = 50
	raceTargets   = 30
	raceMessages  = 200
	raceChildren  = 3
	racePost      = post.ID("race-post")
)

// result is one participant's tally.
type result struct {
	creates, updates, triggers int
	messages                   []string
}

// race runs one participant's share against path. ready is called once the
// store is open; race then waits for start.
func race(path string, ready func(), start <-chan struct{}) (result, error) {
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	ready()
	<-start
	// Each participant walks the keys in its own random order, so the
	// collisions are spread over the run instead of one process winning
	// every key by starting first.
	order := rand.Perm(raceKeys)
	var r result
	for _, k := range order {
		switch err := s.Create(ctx, raceEntry(k)); {
		case err == nil:
			r.creates++
		case !errors.Is(err, ledger.ErrConflict):
			return r, fmt.Errorf("create %d: %w", k, err)
		}
	}
	for _, k := range order {
		e := raceEntry(k)
		next, err := e.MarkUnknown("timeout", t0)
		if err != nil {
			return r, err
		}
		switch err := s.Update(ctx, e, next); {
		case err == nil:
			r.updates++
		case !errors.Is(err, ledger.ErrConflict):
			return r, fmt.Errorf("update %d: %w", k, err)
		}
	}
	for _, i := range rand.Perm(raceTargets) {
		u := post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled}, At: t0}
		switch _, err := s.UpdateTarget(ctx, racePost, raceAccount(i), u); {
		case err == nil:
			r.triggers++
		case !errors.Is(err, post.ErrConflict):
			return r, fmt.Errorf("trigger %d: %w", i, err)
		}
	}
	q := s.Queue("race", 10)
	for {
		msgs, err := q.Receive(ctx, 3, time.Hour)
		if err != nil {
			return r, err
		}
		if len(msgs) == 0 {
			return r, nil
		}
		for _, m := range msgs {
			if err := q.Ack(ctx, m.Receipt); err != nil {
				return r, err
			}
			r.messages = append(r.messages, m.ID)
		}
	}
}

// TestHelperProcess is the child side; it does nothing in a normal run.
// It prints "ready", waits for the start time on stdin, races, and prints its
// tally as "creates N", "updates N" and "message ID" lines.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnvPath)
	if path == "" {
		t.Skip("helper process for TestTwoProcesses")
	}
	if os.Getenv(helperEnvMode) == modeCrashAfterChange {
		if err := crashAfterChange(path); err != nil {
			fmt.Fprintf(os.Stderr, "helper: %v\n", err)
			os.Exit(3)
		}
		os.Exit(0) // not reached: crashAfterChange kills the process
	}
	in := bufio.NewReader(os.Stdin)
	if os.Getenv(helperEnvMode) == "key" {
		fmt.Println("ready")
		<-waitStart(in)
		if err := openAndPutCredential(path, post.AccountID("acct-child-"+os.Getenv(helperEnvName))); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", os.Getenv(helperEnvName), err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	r, err := race(path, func() { fmt.Println("ready") }, waitStart(in))
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", os.Getenv(helperEnvName), err)
		os.Exit(3)
	}
	fmt.Printf("creates %d\nupdates %d\ntriggers %d\n", r.creates, r.updates, r.triggers)
	for _, id := range r.messages {
		fmt.Printf("message %s\n", id)
	}
	os.Exit(0)
}

// waitStart reads the start time (Unix nanoseconds) from a line of in and
// closes the returned channel at that time, so that all processes start
// within a scheduler tick of each other.
func waitStart(in *bufio.Reader) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		line, _ := in.ReadString('\n')
		ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			return
		}
		time.Sleep(time.Until(time.Unix(0, ns)))
	}()
	return ch
}

func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := s.Queue("race", 10)
	sent := map[string]bool{}
	var bad string
	for i := range raceMessages {
		id, err := q.Send(ctx, []byte(strconv.Itoa(i)), 0)
		if err != nil {
			t.Fatal(err)
		}
		sent[id] = true
		if i == raceMessages/2 {
			bad = id
		}
	}
	// One message written in a form this build cannot decode.
	if _, err := s.DB().Exec(`UPDATE queue_messages SET sent_at = 'yesterday' WHERE id = ?`, bad); err != nil {
		t.Fatal(err)
	}
	delete(sent, bad)
	p := post.Post{ID: racePost, Body: "race", CreatedAt: t0}
	for i := range raceTargets {
		p.Targets = append(p.Targets, post.Target{Account: raceAccount(i), Slot: t0, Status: post.Scheduled, UpdatedAt: t0})
	}
	if err := s.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	version, err := s.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr strings.Builder
	}
	children := make([]*child, raceChildren)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), helperEnvPath+"="+path, helperEnvName+"="+strconv.Itoa(i))
		c.cmd.Stderr = &c.stderr
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdout = bufio.NewReader(out)
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
		defer func() {
			if c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
		}()
	}
	// Barrier: every child has opened the file.
	for i, c := range children {
		line, err := c.stdout.ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			t.Fatalf("child %d: first line %q (%v), stderr:\n%s", i, line, err, c.stderr.String())
		}
	}

	// Go: the children and the parent race.
	at := time.Now().Add(100 * time.Millisecond)
	start := make(chan struct{})
	var parent result
	var parentErr error
	var wg sync.WaitGroup
	wg.Go(func() { parent, parentErr = race(path, func() {}, start) })
	for _, c := range children {
		if _, err := fmt.Fprintf(c.stdin, "%d\n", at.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(at))
	close(start)

	outputs := make([]string, len(children))
	for i, c := range children {
		b, err := io.ReadAll(c.stdout)
		if err != nil {
			t.Fatal(err)
		}
		outputs[i] = string(b)
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v, stderr:\n%s", i, err, c.stderr.String())
		}
	}
	wg.Wait()
	if parentErr != nil {
		t.Fatalf("parent: %v", parentErr)
	}
	total := parent
	perProcess := []string{fmt.Sprintf("parent: %d creates, %d updates, %d triggers, %d messages",
		parent.creates, parent.updates, parent.triggers, len(parent.messages))}
	for i, out := range outputs {
		var r result
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			n, _ := strconv.Atoi(f[1])
			switch f[0] {
			case "creates":
				r.creates = n
			case "updates":
				r.updates = n
			case "triggers":
				r.triggers = n
			case "message":
				r.messages = append(r.messages, f[1])
			}
		}
		perProcess = append(perProcess, fmt.Sprintf("child %d: %d creates, %d updates, %d triggers, %d messages",
			i, r.creates, r.updates, r.triggers, len(r.messages)))
		total.creates += r.creates
		total.updates += r.updates
		total.triggers += r.triggers
		total.messages = append(total.messages, r.messages...)
	}
	t.Log(strings.Join(perProcess, "\n"))
	if total.creates != raceKeys {
		t.Errorf("%d creates won across processes, want exactly %d", total.creates, raceKeys)
	}
	if total.updates != raceKeys {
		t.Errorf("%d updates won across processes, want exactly %d", total.updates, raceKeys)
	}
	if total.triggers != raceTargets {
		t.Errorf("%d triggers won across processes, want exactly %d", total.triggers, raceTargets)
	}
	dead, err := q.DeadLetters(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].ID != bad || !strings.HasPrefix(dead[0].Reason, ReasonUndecodable+`: sent_at "yesterday"`) {
		t.Errorf("dead letters %+v, want only the undecodable message %s", dead, bad)
	}
	if v, err := s.DataVersion(ctx); err != nil || v == version {
		t.Errorf("parent's data version %d → %d (%v), want a change: the children wrote", version, v, err)
	}
	got := map[string]int{}
	for _, id := range total.messages {
		got[id]++
	}
	for id := range sent {
		if got[id] != 1 {
			t.Errorf("message %s received %d times, want 1", id, got[id])
		}
	}
	if len(got) != len(sent) {
		t.Errorf("%d distinct messages received, %d sent", len(got), len(sent))
	}
	// Every key: exactly two audit rows ("" → pending → unknown).
	for k := range raceKeys {
		h, err := s.History(ctx, raceEntry(k).Key)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2 || h[0].To != ledger.Pending || h[1].To != ledger.Unknown {
			t.Errorf("key %d history %+v", k, h)
		}
	}
}

// raceAccount is the account of the i-th target of racePost.
func raceAccount(i int) post.AccountID { return post.AccountID(fmt.Sprintf("acct-%02d", i)) }

// openAndPutCredential opens the store at path and stores secretCred(id).
func openAndPutCredential(path string, id post.AccountID) error {
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.PutCredential(context.Background(), id, secretCred(string(id)))
}

// Processes opening one new store at the same moment end with one key:
// each stores a credential, and every credential decrypts afterwards.
func TestKeyAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "fresh.db")
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stderr strings.Builder
	}
	var children []*child
	for i := range raceChildren {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), helperEnvPath+"="+path, helperEnvName+"="+strconv.Itoa(i), helperEnvMode+"=key")
		c.cmd.Stderr = &c.stderr
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
		}()
		if line, err := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "ready" {
			t.Fatalf("child %d: first line %q (%v), stderr:\n%s", i, line, err, c.stderr.String())
		}
		children = append(children, c)
	}
	if _, err := os.Stat(path + ".key"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("key file exists before any Open: %v", err)
	}
	at := time.Now().Add(100 * time.Millisecond)
	for _, c := range children {
		if _, err := fmt.Fprintf(c.stdin, "%d\n", at.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(at))
	if err := openAndPutCredential(path, "acct-parent"); err != nil {
		t.Fatalf("parent: %v", err)
	}
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v, stderr:\n%s", i, err, c.stderr.String())
		}
	}
	s := openAt(t, path)
	ids := []post.AccountID{"acct-parent"}
	for i := range raceChildren {
		ids = append(ids, post.AccountID(fmt.Sprint("acct-child-", i)))
	}
	for _, id := range ids {
		if c, err := s.Credential(context.Background(), id); err != nil || c.AccessToken != secretCred(string(id)).AccessToken {
			t.Errorf("Credential(%s) after the race = %v", id, err)
		}
	}
	wantKeyFile(t, path+".key")
}
