package browser

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// quantiles reports p50 and p99 of ds in milliseconds.
func quantiles(b *testing.B, ds []time.Duration, prefix string) {
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / 1e6 }
	b.ReportMetric(at(0.5), prefix+"_p50_ms")
	b.ReportMetric(at(0.99), prefix+"_p99_ms")
}

// BenchmarkSessionStart starts and stops sessions one after another:
// network, proxy, container, browser ready, tab open.
func BenchmarkSessionStart(b *testing.B) {
	l := newLab(b)
	m := l.manager(b)
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r := l.start(b, m, []string{"shop.test"}, nil)
		ds = append(ds, time.Since(t0))
		require.NoError(b, m.Stop(context.Background(), r))
	}
	quantiles(b, ds, "start")
}

// BenchmarkActionRoundTrip clicks, and takes masked screenshots, in one
// live session on the login page.
func BenchmarkActionRoundTrip(b *testing.B) {
	l := newLab(b)
	m := l.manager(b)
	r := l.start(b, m, []string{"shop.test"}, nil)
	ctx := context.Background()
	_, err := m.Do(ctx, r, computer.Action{Kind: computer.ActNavigate, URL: "https://shop.test/login"})
	require.NoError(b, err)
	var clicks, shots []time.Duration
	for b.Loop() {
		t0 := time.Now()
		_, err := m.Do(ctx, r, computer.Action{Kind: computer.ActClick, X: 100, Y: 120, Button: "left"})
		require.NoError(b, err)
		clicks = append(clicks, time.Since(t0))
		t0 = time.Now()
		o, err := m.Do(ctx, r, computer.Action{Kind: computer.ActScreenshot})
		require.NoError(b, err)
		require.Equal(b, 1, o.Masked)
		shots = append(shots, time.Since(t0))
	}
	quantiles(b, clicks, "click")
	quantiles(b, shots, "screenshot")
}

// BenchmarkLiveSessions holds VISOR_BENCH_SESSIONS sessions (default 6) on
// this worker at once, each on the login page, reports the memory each
// container uses, then has every session take screenshots at the same time.
func BenchmarkLiveSessions(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("VISOR_BENCH_SESSIONS"))
	if n <= 0 {
		n = 6
	}
	l := newLab(b)
	m := l.manager(b)
	m.cfg.MaxSessions = n
	ctx := context.Background()
	refs := make([]computer.Ref, n)
	for i := range refs {
		refs[i] = l.start(b, m, []string{"shop.test"}, nil)
		_, err := m.Do(ctx, refs[i], computer.Action{Kind: computer.ActNavigate, URL: "https://shop.test/login"})
		require.NoError(b, err)
	}
	var total uint64
	for _, r := range refs {
		s, _ := m.get(r)
		st, err := m.Client().ContainerStatsOneShot(ctx, s.container)
		require.NoError(b, err)
		var v container.StatsResponse
		require.NoError(b, json.NewDecoder(st.Body).Decode(&v))
		_ = st.Body.Close()
		total += v.MemoryStats.Usage - v.MemoryStats.Stats["inactive_file"]
	}
	var mu sync.Mutex
	var ds []time.Duration
	for b.Loop() {
		var wg sync.WaitGroup
		for _, r := range refs {
			wg.Go(func() {
				t0 := time.Now()
				_, err := m.Do(ctx, r, computer.Action{Kind: computer.ActScreenshot})
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				require.NoError(b, err)
				ds = append(ds, d)
			})
		}
		wg.Wait()
	}
	// Reported after the loop: b.Loop resets what was reported before it.
	b.ReportMetric(float64(total)/float64(n)/(1<<20), "MiB/session")
	b.ReportMetric(float64(n), "sessions")
	quantiles(b, ds, "concurrent_screenshot")
}

// BenchmarkOverTheWorkerPlane is what serve sees: each session start goes
// to the computer pool on Redis and each action to the worker holding the
// session (PlaneDriver → Redis → PlaneWorker → Manager), one worker with
// this manager, on the login page.
func BenchmarkOverTheWorkerPlane(b *testing.B) {
	l := newLab(b)
	m := l.manager(b)
	rdb := redistest.New(b)
	prefix := redistest.Prefix(b)
	log := slog.New(slog.DiscardHandler)
	w := redisx.NewPlaneWorker(rdb, redisx.PlaneWorkerOptions{ID: m.cfg.WorkerID, Pools: []string{computer.Pool}, Capacity: 8, Prefix: prefix}, log)
	for kind, h := range computer.Handlers(m, nil, nil) {
		w.Handle(kind, h)
	}
	ctx := context.Background()
	require.NoError(b, w.Start(ctx))
	b.Cleanup(w.Stop)
	d := computer.PlaneDriver{Plane: redisx.NewPlane(rdb, prefix, log)}
	start := func() computer.Ref {
		spec := computer.Spec{Tenant: uuid.New(), Agent: uuid.New(), Session: uuid.New(), Width: 800, Height: 600, Allowed: []string{"shop.test"}}
		worker, err := d.Start(ctx, spec)
		require.NoError(b, err)
		return computer.Ref{Tenant: spec.Tenant, Session: spec.Session, Worker: worker}
	}
	// A few starts first (each stopped), then the actions of one session.
	var starts []time.Duration
	for range 5 {
		t0 := time.Now()
		r := start()
		starts = append(starts, time.Since(t0))
		require.NoError(b, d.Stop(ctx, r))
	}
	r := start()
	_, err := d.Do(ctx, r, computer.Action{Kind: computer.ActNavigate, URL: "https://shop.test/login"})
	require.NoError(b, err)
	var clicks, shots []time.Duration
	for b.Loop() {
		t0 := time.Now()
		_, err := d.Do(ctx, r, computer.Action{Kind: computer.ActClick, X: 100, Y: 120, Button: "left"})
		require.NoError(b, err)
		clicks = append(clicks, time.Since(t0))
		t0 = time.Now()
		o, err := d.Do(ctx, r, computer.Action{Kind: computer.ActScreenshot})
		require.NoError(b, err)
		require.Equal(b, 1, o.Masked)
		shots = append(shots, time.Since(t0))
	}
	require.NoError(b, d.Stop(ctx, r))
	quantiles(b, starts, "start")
	quantiles(b, clicks, "click")
	quantiles(b, shots, "screenshot")
}
