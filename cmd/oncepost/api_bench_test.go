package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/httpapi"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
)

// apiClients is how many clients the API benchmarks run at once: the
// target's 16, and fewer to show where the latency comes from.
var apiClients = []int{16, 8, 4}

// benchAPI is `oncepost serve` in the benchmark's process: the embedded
// runtime running, its API on a 127.0.0.1 listener, a token allowed to
// make posts and read (rate limit out of the way), two accounts.
type benchAPI struct {
	url, token string
	accounts   []post.AccountID
	client     *http.Client
}

func newBenchAPI(b *testing.B) *benchAPI {
	b.Helper()
	w := newWorkspace(b, sandbox.Options{}, 2)
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir, cfg.Logger = w.db, filepath.Join(w.dir, "media"), discardLogger()
	rt, err := openRuntime(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- rt.run(ctx) }()
	token := apitoken.New()
	if err := rt.store.AddToken(ctx, apitoken.Token{ID: apitoken.NewID(), Name: "bench", Hash: apitoken.Hash(token),
		Scopes: []apitoken.Scope{apitoken.ScopePosts, apitoken.ScopeRead}, Rate: 1e6, CreatedAt: time.Now().UTC()}); err != nil {
		b.Fatal(err)
	}
	api, err := httpapi.New(rt.apiConfig())
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api)
	b.Cleanup(func() {
		srv.Close()
		cancel()
		<-ran
		rt.Close()
	})
	return &benchAPI{url: srv.URL, token: token, accounts: w.accounts,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

// do sends one request and reads the whole answer; it fails the benchmark
// on any status but want.
func (a *benchAPI) do(b *testing.B, method, path, key string, body []byte, want int) []byte {
	req, err := http.NewRequest(method, a.url+path, bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		b.Error(err)
		return nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.Errorf("%s %s = %d %s, want %d", method, path, resp.StatusCode, out, want)
	}
	return out
}

// draft is a post for both accounts, id given, an hour from now.
func (a *benchAPI) draft(id string, at time.Time) []byte {
	return fmt.Appendf(nil, `{"id":%q,"body":"Benchmark post %s, published exactly once.","targets":[{"account":%q,"at":%q},{"account":%q,"at":%q}]}`,
		id, id, a.accounts[0], at.Format(time.RFC3339), a.accounts[1], at.Format(time.RFC3339))
}

// runClients runs b.N requests spread over clients clients and reports
// the latency percentiles and the throughput.
func runClients(b *testing.B, clients int, one func(i int)) {
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t0 := time.Now()
				one(i)
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

// BenchmarkAPICreatePost: POST /v1/posts, each with its own
// Idempotency-Key, a post for two accounts, by 16 (8, 4) clients at once
// through a real TCP connection: validation against the accounts and
// the blocklist, the post, its two targets, their schedules and the key
// in one SQLite transaction. Target: ≥ 1,000 creates/s, p99 ≤ 20 ms.
func BenchmarkAPICreatePost(b *testing.B) {
	for _, clients := range apiClients {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			a := newBenchAPI(b)
			at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
			runClients(b, clients, func(i int) {
				id := fmt.Sprintf("c%07d", i)
				a.do(b, "POST", "/v1/posts", "key-"+id, a.draft(id, at), http.StatusCreated)
			})
		})
	}
}

// BenchmarkAPIGetPost: GET /v1/posts/{id} (the post, its targets and
// their ledger history) by 16 clients at once, over 1,000 posts.
func BenchmarkAPIGetPost(b *testing.B) {
	a := newBenchAPI(b)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	const posts = 1000
	for i := range posts {
		id := fmt.Sprintf("g%04d", i)
		a.do(b, "POST", "/v1/posts", "key-"+id, a.draft(id, at), http.StatusCreated)
	}
	runClients(b, 16, func(i int) {
		a.do(b, "GET", fmt.Sprintf("/v1/posts/g%04d", i%posts), "", nil, http.StatusOK)
	})
}
