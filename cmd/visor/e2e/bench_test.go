package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// BenchmarkLivePropagation measures, over 1,000 changes, the time from the
// response of the committing admin request on replica A to the
// list_changed arriving on a stream held by replica B: a 2026-07-28 listen
// stream, then a legacy session's GET stream. The figures are per change;
// b.N is ignored (run with -benchtime 1x).
//
//	go test ./cmd/visor/e2e -run '^$' -bench LivePropagation -benchtime 1x
func BenchmarkLivePropagation(b *testing.B) {
	srv := privateRedis(b)
	w := newWorld(b)
	a := startReplica(b, "A", w.dbURL, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m", "VISOR_LOG_LEVEL=error")
	r := startReplica(b, "B", w.dbURL, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m", "VISOR_LOG_LEVEL=error")
	b.Run("listen", func(b *testing.B) { propagation(b, w, a, listenModern(b, r, w.adaKey)) })
	b.Run("legacy-get", func(b *testing.B) { propagation(b, w, a, listenLegacy(b, r, w.adaKey)) })
}

func propagation(b *testing.B, w *world, a *replica, l *listener) {
	const changes = 1000
	defer l.Close()
	// Warm up connections and caches.
	for i := range 20 {
		w.setDenied(b, a, w.ada, deniedFor(i)...)
		expectChange(b, l, 5*time.Second, "warm-up")
	}

	var fromResponse, fromRequest []time.Duration
	early := 0
	b.ResetTimer()
	for i := range changes {
		start := time.Now()
		w.setDenied(b, a, w.ada, deniedFor(i)...)
		responded := time.Now()
		m := expectChange(b, l, 5*time.Second, fmt.Sprintf("change %d", i))
		d := m.At.Sub(responded)
		if d < 0 {
			early++ // the notification beat the response to the client
			d = 0
		}
		fromResponse = append(fromResponse, d)
		fromRequest = append(fromRequest, m.At.Sub(start))
	}
	b.StopTimer()
	expectQuiet(b, l, 200*time.Millisecond, "one notification per change")
	p50, p99, pmax := percentiles(fromResponse)
	q50, q99, qmax := percentiles(fromRequest)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(pmax), "max-ms")
	b.Logf("propagation over %d changes, response on A -> list_changed on B: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d notifications arrived before the response)",
		changes, ms(p50), ms(p99), ms(pmax), early)
	b.Logf("request sent on A -> list_changed on B (includes the commit): p50 %.2f ms, p99 %.2f ms, max %.2f ms", ms(q50), ms(q99), ms(qmax))
}

// deniedFor alternates ada's denied_tools so every change alters her set.
func deniedFor(i int) []string {
	if i%2 == 0 {
		return []string{"agent_status"}
	}
	return nil
}

func percentiles(ds []time.Duration) (p50, p99, pmax time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkLiveIdleStreamMemory opens 10,000 idle 2026-07-28
// subscriptions/listen streams on one replica (100 employees with 100
// streams each) and reports the replica's memory growth per stream: Go heap
// and stacks in use, and resident set size, read from its /metrics.
//
//	go test ./cmd/visor/e2e -run '^$' -bench LiveIdleStreamMemory -benchtime 1x
func BenchmarkLiveIdleStreamMemory(b *testing.B) {
	const agents = 100
	perAgent := idleStreams() / agents
	h2c := os.Getenv("VISOR_BENCH_H2C") != ""
	env := []string{"VISOR_LOG_LEVEL=error", "GOGC=" + gogc()}
	if h2c {
		// Streams share HTTP/2 connections (up to 1,000 each), so they
		// need no descriptor of their own and may outnumber them.
		env = append(env, "VISOR_HTTP_H2C=true", fmt.Sprintf("VISOR_MCP_MAX_STREAMS=%d", 2*agents*perAgent))
	} else {
		raiseFileLimit(b, agents*perAgent+4096) // each side of a stream is in its own process; the replica inherits the limit
	}
	srv := privateRedis(b)
	w := newWorld(b)
	ctx := context.Background()
	tokens := make([]string, agents)
	ags := make([]identity.Agent, agents)
	for i := range tokens {
		ag, err := w.ids.CreateAgent(ctx, w.acme.ID, identity.NewAgent{Name: "emp" + strconv.Itoa(i)})
		require.NoError(b, err)
		tokens[i], ags[i] = w.agentKey(b, w.acme, ag), ag
	}
	r := startReplica(b, "B", w.dbURL, srv.URL(), env...)
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true, DialContext: spreadDialer()}
	if h2c {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	client := &http.Client{Transport: tr}
	changed := make([]atomic.Int64, agents) // list_changed received, by employee
	// Touch every token once (verifies its secret) before the baseline.
	for _, tok := range tokens {
		_ = toolNames(b, r, tok)
	}
	// Sleep, not a signal: the baseline is the replica's memory once its
	// garbage collector has had time to run; no event says it has.
	time.Sleep(2 * time.Second)
	before := metrics(b, r)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, agents*perAgent)
	sem := make(chan struct{}, 32)
	b.ResetTimer()
	for i := range agents * perAgent {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := openIdleListen(ctx, client, r, tokens[i%agents], &changed[i%agents]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	// Sleep, not a signal: as for the baseline, memory is read after the
	// collector has had time to run.
	time.Sleep(3 * time.Second)
	after := metrics(b, r)
	n := float64(agents * perAgent)
	// At this many streams the replica still answers its probes and calls.
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(r.base + path)
		require.NoError(b, err)
		resp.Body.Close()
		b.Logf("%s with %d streams held: %d", path, int(n), resp.StatusCode)
	}
	require.NotEmpty(b, toolNames(b, r, tokens[0]), "tools/list answers with the streams held")
	b.ReportMetric(after["visor_mcp_streams_limit"], "stream-limit")
	require.EqualValues(b, n, after["visor_live_streams"])
	heap := (after["go_memstats_heap_inuse_bytes"] - before["go_memstats_heap_inuse_bytes"]) / n
	stack := (after["go_memstats_stack_inuse_bytes"] - before["go_memstats_stack_inuse_bytes"]) / n
	rss := (after["process_resident_memory_bytes"] - before["process_resident_memory_bytes"]) / n
	gor := (after["go_goroutines"] - before["go_goroutines"]) / n
	b.ReportMetric((heap+stack)/1024, "KiB/stream")
	b.ReportMetric(rss/1024, "RSS-KiB/stream")
	b.Logf("%d idle listen streams (%d principals, h2c %v): heap %.1f KiB + stacks %.1f KiB = %.1f KiB per stream; RSS %.1f KiB per stream; %.1f goroutines per stream",
		int(n), agents, h2c, heap/1024, stack/1024, (heap+stack)/1024, rss/1024, gor)
	b.ReportMetric(gor, "goroutines/stream")

	// A change to one employee reaches exactly her streams: all of them,
	// and no stream of the 99 others.
	t0 := time.Now()
	w.setDenied(b, r, ags[7], "agent_status")
	require.Eventually(b, func() bool { return changed[7].Load() >= int64(perAgent) }, time.Minute, 20*time.Millisecond,
		"every stream of the changed employee hears list_changed")
	took := time.Since(t0)
	// Sleep, not a signal: a stray notification to another employee's
	// stream would arrive within this window, and nothing announces its absence.
	time.Sleep(2 * time.Second)
	var others int64
	for i := range changed {
		if i != 7 {
			others += changed[i].Load()
		}
	}
	require.EqualValues(b, perAgent, changed[7].Load(), "every stream of the changed employee got list_changed")
	require.Zero(b, others, "no stream of another employee got list_changed")
	b.Logf("list_changed reached the changed employee's %d streams of %d within %s, and none of the others", perAgent, int(n), took.Round(time.Millisecond))
}

// openIdleListen opens one subscriptions/listen stream and returns once it
// is acknowledged; the stream stays open, read and discarded, until ctx ends.
func openIdleListen(ctx context.Context, c *http.Client, r *replica, token string, changed *atomic.Int64) error {
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": map[string]any{
		"_meta": modernMeta(), "notifications": map[string]any{"toolsListChanged": true}}}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/t/acme/mcp", bytes.NewReader(body))
	if err != nil {
		return err
	}
	setMCPHeaders(req, token, modernVersion, "", msg)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return fmt.Errorf("listen: %d %s", resp.StatusCode, raw)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			resp.Body.Close()
			return fmt.Errorf("listen stream ended before its acknowledgment: %w", err)
		}
		if strings.Contains(line, "notifications/subscriptions/acknowledged") {
			break
		}
	}
	go func() {
		defer resp.Body.Close()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if strings.Contains(line, "notifications/tools/list_changed") {
				changed.Add(1)
			}
		}
	}()
	return nil
}

// metrics reads r's Prometheus metrics (unlabelled samples only).
func metrics(tb testing.TB, r *replica) map[string]float64 {
	tb.Helper()
	resp, err := http.Get(r.base + "/metrics")
	require.NoError(tb, err)
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, "{") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// gogc is the replica's GOGC in the memory benchmark: low, so that the heap
// figures are mostly live memory rather than garbage awaiting collection.
// VISOR_BENCH_GOGC overrides it.
func gogc() string {
	if v := os.Getenv("VISOR_BENCH_GOGC"); v != "" {
		return v
	}
	return "10"
}
