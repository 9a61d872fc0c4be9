package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// The endpoint benchmark (docs/benchmarks.md): the full stack — HTTP, auth
// with a real agent key, the policy, and for tools/call a durable audit row
// on real Postgres — against a bare go-sdk server with the same tools and no
// auth, side by side in one process, both in the stateless 2026-07-28 era.
//
//	go test ./web/mcp -run '^$' -bench Endpoint -benchtime 3000x
//
// Timing is reported, never asserted.

const benchWorkers = 16

// benchEcho is the trivial tool both servers call.
func benchEcho(_ context.Context, c tools.Call) (*tools.Result, error) {
	s, _ := tools.String(c.Args, "text")
	return &tools.Result{Text: s}, nil
}

func benchRegistry(ids *identity.Service, store *postgres.IdentityStore, db *postgres.DB) *tools.Registry {
	return benchRegistrySized(ids, store, db, 0)
}

// benchRegistrySized is benchRegistry with extra synthetic tools, each with
// a description and two parameters, to list a catalog of a real size.
func benchRegistrySized(ids *identity.Service, store *postgres.IdentityStore, db *postgres.DB, extra int) *tools.Registry {
	reg := catalog.New(agents.NewService(ids, store, postgres.NewReservationStore(db)),
		catalog.FamilyFunc(func(r *tools.Registry) {
			for i := range extra {
				r.Register(tools.Tool{Name: fmt.Sprintf("synthetic_%03d", i), Family: "bench", Scope: identity.ScopeToolsRead,
					Description: "A synthetic tool that stands in for one of a full catalog's tools in the list benchmark.",
					Params: []tools.Param{{Name: "text", Type: "string", Description: "Text to echo."},
						{Name: "count", Type: "integer", Description: "How many times."}},
					Handler: benchEcho, Annotations: tools.Annotations{ReadOnly: true}})
			}
			r.Register(tools.Tool{Name: "bench_echo", Family: "bench", Scope: identity.ScopeToolsRead, Description: "Echo text.",
				Params: []tools.Param{{Name: "text", Type: "string", Description: "Text."}}, Handler: benchEcho,
				Annotations: tools.Annotations{ReadOnly: true}})
			// The same tool undeclared: treated as changing something, so
			// its row is made durable as pending before it runs.
			r.Register(tools.Tool{Name: "bench_write", Family: "bench", Scope: identity.ScopeToolsRead, Description: "Echo text.",
				Params: []tools.Param{{Name: "text", Type: "string", Description: "Text."}}, Handler: benchEcho})
		}))
	return reg
}

// fullStack starts the real endpoint and returns its URL and an agent key,
// and the URL of the same endpoint behind a fixed-principal middleware
// instead of auth (to separate auth's cost from the endpoint's).
func fullStack(b *testing.B) (url, token, noAuth string, reg *tools.Registry) {
	return fullStackWith(b, 0, Options{})
}

// fullStackWith is fullStack with extra synthetic tools and endpoint options.
func fullStackWith(b *testing.B, extra int, opts Options) (url, token, noAuth string, reg *tools.Registry) {
	ctx := context.Background()
	db := pgtest.New(b)
	logger := slog.New(slog.DiscardHandler)
	store := postgres.NewIdentityStore(db)
	ids := identity.NewService(store, changes.Discard{}, logger)
	if benchPostgresCPU == nil { // the benchmark's first stack is the one it measures as full
		benchPostgresCPU = func() (time.Duration, bool) { return pgtest.ServerCPU(ctx, db.Pool) }
		b.Cleanup(func() { benchPostgresCPU = nil })
	}
	trail := postgres.NewAuditLog(db, 4, logger)
	if err := trail.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(trail.Stop)
	reg = benchRegistrySized(ids, store, db, extra)
	ep := New(reg, tools.NewSubjects(store, tools.NoGrants{}, time.Second), trail, live.NoStreams{}, opts)
	e := echo.New()
	ep.Register(e, auth.NewResolver(store, store, auth.NewURLs("http://visor.test"), logger).Middleware(""))
	srv := httptest.NewServer(e)
	b.Cleanup(srv.Close)
	var fixed identity.Principal
	e2 := echo.New()
	ep.Register(e2, func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), fixed)))
			return next(c)
		}
	})
	srv2 := httptest.NewServer(e2)
	b.Cleanup(srv2.Close)
	t, err := ids.CreateTenant(ctx, "bench", "Bench")
	if err != nil {
		b.Fatal(err)
	}
	a, err := ids.CreateAgent(ctx, t.ID, identity.NewAgent{Name: "bee"})
	if err != nil {
		b.Fatal(err)
	}
	_, token, err = ids.CreateKey(ctx, t.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: a.ID, Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	fixed = identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindEmployee, AgentID: a.ID, Scopes: identity.DefaultEmployeeScopes}
	return srv.URL + "/t/bench/mcp", token, srv2.URL + "/t/bench/mcp", reg
}

// bareServer serves the same tool names and schemas from a plain go-sdk
// server: no auth, no policy, no audit.
func bareServer(b *testing.B, reg *tools.Registry) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil)
	for _, t := range reg.All() {
		s.AddTool(&sdk.Tool{Name: t.Name, Description: reg.ListedDescription(t), InputSchema: reg.InputSchema(t)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}}, nil
			})
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL
}

// load sends b.N copies of one request from benchWorkers goroutines and
// reports req/s, p50 and p99.
func load(b *testing.B, url, token string, hdr map[string]string, body string) {
	loadWith(b, benchWorkers, url, token, hdr, body)
}

// loadStats are the figures loadWith reports.
type loadStats struct {
	rps      float64
	p50, p99 time.Duration
}

// benchPostgresCPU reads the CPU time the Postgres server has used so far
// (pgtest.ServerCPU on the database of the benchmark's first full stack,
// the one its "full" server uses), so that loadWith can report the
// database's share of a request; nil outside a benchmark with a full
// stack.
var benchPostgresCPU func() (time.Duration, bool)

// processCPU is the CPU time (user and system) this process has used:
// the benchmark's clients and servers together.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadWith is load from the given number of goroutines. It returns the
// figures it reports.
func loadWith(b *testing.B, workers int, url, token string, hdr map[string]string, body string) loadStats {
	l := newLoader(b, workers, url, token, hdr, body)
	pg0, pgOK := time.Duration(0), false
	if benchPostgresCPU != nil {
		pg0, pgOK = benchPostgresCPU()
	}
	cpu0 := processCPU()
	b.ResetTimer()
	lat, elapsed, err := l.run(b.N)
	b.StopTimer()
	cpu := processCPU() - cpu0
	if err != nil {
		b.Fatal(err)
	}
	// CPU per request: this process (clients and server together) and the
	// Postgres server (the database's backends and the server's background
	// processes: with no other database busy, the audit rows' commits).
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	if pgOK {
		if pg1, ok := benchPostgresCPU(); ok {
			b.ReportMetric(float64((pg1-pg0).Microseconds())/float64(b.N), "pg-µs/op")
		}
	}
	st := statsOf(lat, elapsed)
	b.ReportMetric(st.rps, "req/s")
	b.ReportMetric(float64(st.p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(st.p99.Microseconds()), "p99-µs")
	return st
}

// statsOf is the throughput and percentiles of requests that took lat in
// all and elapsed of wall time; it sorts lat.
func statsOf(lat []time.Duration, elapsed time.Duration) loadStats {
	slices.Sort(lat)
	return loadStats{rps: float64(len(lat)) / elapsed.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
}

// loader sends one request body to one server from a fixed number of
// goroutines, each in a closed loop (the next request when the last is
// answered).
type loader struct {
	workers int
	send    func() error
}

// newLoader returns a loader for url with its connections and the
// server's caches warmed by 50 requests.
func newLoader(b *testing.B, workers int, url, token string, hdr map[string]string, body string) *loader {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}}
	// Requests in flight on one session need distinct ids.
	var ids atomic.Int64
	session := hdr["Mcp-Session-Id"] != ""
	send := func() error {
		msg := body
		if session {
			msg = strings.Replace(body, `"id":1,`, fmt.Sprintf(`"id":%d,`, ids.Add(1)), 1)
		}
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || bytes.Contains(data, []byte(`"error"`)) || bytes.Contains(data, []byte(`"isError":true`)) {
			return fmt.Errorf("status %d: %s", resp.StatusCode, data)
		}
		return nil
	}
	for range 50 { // warm connections and caches
		if err := send(); err != nil {
			b.Fatal(err)
		}
	}
	return &loader{workers: workers, send: send}
}

// run sends n requests, spread over the loader's goroutines, and returns
// each one's latency and the wall time of them all; it stops at the first
// failed request.
func (l *loader) run(n int) ([]time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, l.workers)
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	start := time.Now()
	for w := range l.workers {
		m := n / l.workers
		if w < n%l.workers {
			m++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[w] = make([]time.Duration, 0, m)
			for range m {
				t0 := time.Now()
				if err := l.send(); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	return slices.Concat(lat...), time.Since(start), failed
}

func BenchmarkEndpoint(b *testing.B) {
	full, token, noAuth, reg := fullStack(b)
	bare := bareServer(b, reg)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_echo","arguments":{"text":"hi"},` + modernMeta + `}}`
	b.Run("list/bare", func(b *testing.B) { load(b, bare, "", modernHeaders("tools/list", ""), list) })
	b.Run("list/noauth", func(b *testing.B) { load(b, noAuth, "fixed", modernHeaders("tools/list", ""), list) })
	b.Run("list/full", func(b *testing.B) { load(b, full, token, modernHeaders("tools/list", ""), list) })
	b.Run("call/bare", func(b *testing.B) { load(b, bare, "", modernHeaders("tools/call", "bench_echo"), call) })
	b.Run("call/noauth", func(b *testing.B) { load(b, noAuth, "fixed", modernHeaders("tools/call", "bench_echo"), call) })
	b.Run("call/full", func(b *testing.B) { load(b, full, token, modernHeaders("tools/call", "bench_echo"), call) })
	write := strings.Replace(call, "bench_echo", "bench_write", 1)
	b.Run("call-write/bare", func(b *testing.B) { load(b, bare, "", modernHeaders("tools/call", "bench_write"), write) })
	b.Run("call-write/full", func(b *testing.B) { load(b, full, token, modernHeaders("tools/call", "bench_write"), write) })
}

// BenchmarkListCatalog lists a catalog of about 90 tools at 1, 8 and 16
// concurrent clients in both eras (2026-07-28 stateless, 2025-11-25 in a
// session), with the tools/list cache on ("full"), with it off ("uncached":
// the policy runs and the page is encoded on every request), and from a
// bare go-sdk server holding the same tools, all in one run so that the
// ratios hold on a loaded machine.
//
//	go test ./web/mcp -run '^$' -bench ListCatalog -benchtime 2000x
func BenchmarkListCatalog(b *testing.B) {
	const extra = 80 // plus the catalog's own and the two bench tools: about 90
	full, token, _, reg := fullStackWith(b, extra, Options{})
	uncached, token2, _, _ := fullStackWith(b, extra, Options{ListCacheEntries: -1})
	bare, bareSessions := bareServers(b, reg)
	b.Logf("catalog: %d tools", len(reg.All()))
	modernList := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	legacyList := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	const version = "2025-11-25"
	type server struct{ name, url, token, session string }
	for _, workers := range []int{1, 8, 16} {
		for _, era := range []struct {
			name    string
			body    string
			servers []server
		}{
			{"modern", modernList, []server{{"bare", bare, "", ""}, {"uncached", uncached, token2, ""}, {"full", full, token, ""}}},
			// The earlier era against a bare server with sessions (how a
			// go-sdk server serves it) and a stateless one (a server
			// session per request).
			{"legacy", legacyList, []server{{"bare", bareSessions, "", "bare"}, {"bare-stateless", bare, "", ""},
				{"uncached", uncached, token2, "auth"}, {"full", full, token, "auth"}}},
		} {
			st := map[string]loadStats{}
			for _, srv := range era.servers {
				hdr := modernHeaders("tools/list", "")
				if era.name == "legacy" {
					hdr = map[string]string{"Mcp-Protocol-Version": version}
					if srv.session != "" {
						hdr["Mcp-Session-Id"] = benchSession(b, srv.url, srv.token, version)
					}
				}
				b.Run(fmt.Sprintf("%s/c%d/%s", era.name, workers, srv.name), func(b *testing.B) {
					st[srv.name] = loadWith(b, workers, srv.url, srv.token, hdr, era.body)
				})
			}
			f := st["full"]
			for _, name := range []string{"bare", "bare-stateless"} {
				if bs := st[name]; bs.rps > 0 && f.rps > 0 {
					b.Logf("%s c%d: full ÷ %s throughput %.2f×; p50 %s %.2f ms, full %.2f ms",
						era.name, workers, name, f.rps/bs.rps, name, float64(bs.p50)/1e6, float64(f.p50)/1e6)
				}
			}
		}
	}
}

// benchSession opens a legacy session on url and returns its id.
func benchSession(b *testing.B, url, token, version string) string {
	post := func(hdr map[string]string, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post(nil, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`, version))
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		b.Fatalf("initialize: status %d, no session", resp.StatusCode)
	}
	if r := post(map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": version}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.StatusCode != http.StatusAccepted {
		b.Fatalf("initialized: status %d", r.StatusCode)
	}
	return id
}
