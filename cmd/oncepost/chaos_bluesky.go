package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/localpds"
	"oncepost/shared/platform"
	"oncepost/shared/platform/bluesky"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// blueskyFixture is the Bluesky reference PDS (installed by `make pds`)
// behind faultProxy, which applies the drill's fault plan to every
// putRecord: the PDS itself is never told about faults, so what it stores
// is what a real PDS would.
type blueskyFixture struct {
	pds   *localpds.PDS
	proxy *faultProxy
	srv   *http.Server
	url   string

	mu   sync.Mutex
	dids []string
}

func newBlueskyFixture(ctx context.Context, p chaosProfile) (chaosFixture, error) {
	root, err := sourceRoot()
	if err != nil {
		return nil, err
	}
	pds, err := localpds.Start(root, "")
	if err != nil {
		return nil, fmt.Errorf("start the Bluesky reference PDS: %w", err)
	}
	proxy := &faultProxy{upstream: pds.URL, p: p, rng: rand.New(rand.NewPCG(uint64(p.Seed), 0x6f6e6365)), log: map[string][]proxyFault{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pds.Stop()
		return nil, err
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return &blueskyFixture{pds: pds, proxy: proxy, srv: srv, url: "http://" + l.Addr().String()}, nil
}

// sourceRoot is the oncepost source tree holding the working directory:
// the PDS is installed in its infra/pds.
func sourceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "infra", "pds", "launch.mjs")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", badInput("--platform bluesky runs the reference PDS of the oncepost source tree (infra/pds, `make pds`): run it from there")
		}
	}
}

func (f *blueskyFixture) addAccount(ctx context.Context, name string) (post.Account, platform.Credential, error) {
	a, err := f.pds.NewAccount(ctx, name+".test", "chaos-"+name)
	if err != nil {
		return post.Account{}, platform.Credential{}, err
	}
	f.mu.Lock()
	f.dids = append(f.dids, a.DID)
	f.mu.Unlock()
	acc := post.Account{ID: post.AccountID(name), Platform: "bluesky", Handle: "@" + a.Handle, BaseURL: f.url, RemoteID: a.DID, CredentialRef: name, Gate: post.GateAuto}
	return acc, platform.Credential{AccessToken: a.AccessJWT, RefreshToken: a.RefreshJWT}, nil
}

// records are every post on the PDS by text, read with listRecords.
func (f *blueskyFixture) records(ctx context.Context) (map[string][]localpds.Record, error) {
	f.mu.Lock()
	dids := append([]string(nil), f.dids...)
	f.mu.Unlock()
	byText := map[string][]localpds.Record{}
	for _, did := range dids {
		recs, err := f.pds.Posts(ctx, did)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			var v struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				return nil, fmt.Errorf("record %s: %w", r.URI, err)
			}
			byText[v.Text] = append(byText[v.Text], r)
		}
	}
	return byText, nil
}

func (f *blueskyFixture) copies(ctx context.Context) (map[string][]string, error) {
	byText, err := f.records(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for text, rs := range byText {
		for _, r := range rs {
			out[text] = append(out[text], r.URI)
		}
	}
	return out, nil
}

func (f *blueskyFixture) duplicates(ctx context.Context) (int, error) {
	byText, err := f.records(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rs := range byText {
		n += len(rs) - 1
	}
	return n, nil
}

// check applies checkRounds to the PDS's records (listRecords); a held or
// failed round is explained by the proxy's log of dropped sends.
func (f *blueskyFixture) check(ctx context.Context, rt *runtime, jobs []publishing.Job, res *chaosResult) error {
	byText, err := f.records(ctx)
	if err != nil {
		return err
	}
	view := platformView{textOf: map[string]string{}, copies: map[string]int{}, explain: f.proxy.explain, parentOf: map[string]string{}}
	for text, rs := range byText {
		view.copies[text] = len(rs)
		for _, r := range rs {
			view.textOf[r.URI] = text
			var v struct {
				Reply *struct {
					Parent struct {
						URI string `json:"uri"`
					} `json:"parent"`
				} `json:"reply"`
			}
			if err := json.Unmarshal(r.Value, &v); err == nil && v.Reply != nil {
				view.parentOf[r.URI] = v.Reply.Parent.URI
			}
		}
	}
	return checkRounds(ctx, rt, jobs, view, res)
}

func (f *blueskyFixture) close() {
	_ = f.srv.Close()
	f.pds.Stop()
}

// proxyFault is what the proxy did to one putRecord.
type proxyFault struct {
	kind      string // "drop", "lose-answer", "delay", ""
	committed bool   // the PDS answered 2xx
}

// faultProxy forwards to the PDS and applies the drill's fault plan to
// putRecord, the only call that creates a post: drop it before the PDS
// sees it (Loss), forward it and lose the answer (ResponseLoss), or hold
// it past the client's timeout before forwarding (DelayRate, Delay), so
// the PDS commits after the client gave up.
type faultProxy struct {
	upstream string
	p        chaosProfile

	mu  sync.Mutex
	rng *rand.Rand
	log map[string][]proxyFault // by record key
}

func (x *faultProxy) draw() (drop, loseAnswer, delay bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.rng.Float64()
	return r < x.p.Loss, r >= x.p.Loss && r < x.p.Loss+x.p.ResponseLoss, x.rng.Float64() < x.p.DelayRate
}

func (x *faultProxy) record(rkey string, f proxyFault) {
	x.mu.Lock()
	x.log[rkey] = append(x.log[rkey], f)
	x.mu.Unlock()
}

func (x *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	isPut := strings.HasSuffix(r.URL.Path, "/com.atproto.repo.putRecord")
	var rkey string
	var drop, loseAnswer, delay bool
	if isPut {
		var in struct {
			RKey string `json:"rkey"`
		}
		_ = json.Unmarshal(body, &in)
		rkey = in.RKey
		drop, loseAnswer, delay = x.draw()
	}
	hangUp := func() {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}
	if drop {
		x.record(rkey, proxyFault{kind: "drop"})
		hangUp()
		return
	}
	if delay {
		time.Sleep(x.p.Delay)
	}
	// The upstream call outlives the client's request: a held create is
	// committed even though its client gave up, as on a real platform.
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, x.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if isPut {
			x.record(rkey, proxyFault{kind: "upstream-error"})
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if isPut {
		kind := ""
		switch {
		case loseAnswer:
			kind = "lose-answer"
		case delay:
			kind = "delay"
		}
		x.record(rkey, proxyFault{kind: kind, committed: resp.StatusCode/100 == 2})
	}
	if loseAnswer {
		hangUp()
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// explain says why a held or failed round is not explained by the fault
// plan, or "" when it is: held after the attempt budget of sends, every
// one dropped before the PDS saw it.
func (x *faultProxy) explain(e ledger.Entry) string {
	if e.State != ledger.Held || e.Reason != publishing.ReasonTooManyAttempts {
		return "the fault plan never makes a post " + string(e.State) + " for this reason"
	}
	x.mu.Lock()
	sends := x.log[bluesky.RecordKey(e.Handle, e.Slot)]
	x.mu.Unlock()
	dropped := 0
	for _, s := range sends {
		if s.committed {
			return "a send committed, yet the post was not found"
		}
		if s.kind == "drop" {
			dropped++
		}
	}
	if dropped < chaosMaxAttempts {
		return fmt.Sprintf("only %d of its %d sends were dropped", dropped, len(sends))
	}
	return ""
}

// chaosNaiveBluesky is the seed's template against the PDS: three tries,
// each a create of its own (a fresh record key, as createRecord would
// pick), no ledger.
func chaosNaiveBluesky(ctx context.Context, p chaosProfile) (chaosResult, error) {
	fx, err := newBlueskyFixture(ctx, p)
	if err != nil {
		return chaosResult{}, err
	}
	defer fx.close()
	return runNaive(ctx, p, fx, 8, bluesky.Connector{}.Client)
}
