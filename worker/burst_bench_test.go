package worker_test

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/worker"
)

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// burstWorkers starts VISOR_BENCH_WORKERS (1 if unset) workers on the
// env's database, each as `visor worker` runs with its defaults: its own
// Postgres pool of VISOR_BENCH_POOL connections (40, VISOR_WORKER_DB_POOL's
// default), the responsibilities queue at VISOR_BENCH_CONCURRENCY (20,
// VISOR_WORKER_RESPONSIBILITIES_CONCURRENCY's default), and the tick
// claimers: VISOR_BENCH_CLAIMERS (worker.DefaultTickClaimers) claiming
// sets of VISOR_BENCH_BATCH (worker.DefaultTickBatch). Each run's round
// is written queued, as in production. It reports the settings
// (call report after the timer is reset).
func (e *responsibilityEnv) burstWorkers(b *testing.B) (report func()) {
	b.Helper()
	n, conc, size := benchEnv("VISOR_BENCH_WORKERS", 1), benchEnv("VISOR_BENCH_CONCURRENCY", 20), benchEnv("VISOR_BENCH_POOL", 40)
	claimers, batch := benchEnv("VISOR_BENCH_CLAIMERS", worker.DefaultTickClaimers), benchEnv("VISOR_BENCH_BATCH", worker.DefaultTickBatch)
	url := e.db.Pool.Config().ConnString()
	for range n {
		db, err := postgres.Open(e.ctx, url, func(c *pgxpool.Config) { c.MaxConns = int32(size) })
		require.NoError(b, err)
		b.Cleanup(db.Close) // after the runner stops
		store := postgres.NewResponsibilityStore(db)
		svc := responsibilities.NewService(store, agents.NewDelegation(postgres.NewIdentityStore(db)))
		svc.SetQuestions(store)
		svc.SetSchedules(store)
		jobs := &worker.ResponsibilityJobs{}
		store.SetJobs(jobs)
		reg := worker.NewRegistry()
		worker.RegisterResponsibilitiesWith(reg, svc, worker.ResponsibilityOptions{Concurrency: conc})
		r, err := worker.NewRunner(db.Pool, reg, worker.Options{Logger: slog.New(slog.DiscardHandler), DrainTimeout: 5 * time.Second})
		require.NoError(b, err)
		jobs.Client = r.Client()
		require.NoError(b, r.Start(e.ctx))
		b.Cleanup(r.Stop)
		d := &worker.TickDispatcher{Responsibilities: svc, Batch: batch, Claimers: claimers, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
		require.NoError(b, d.Start(e.ctx))
		b.Cleanup(d.Stop)
	}
	return func() { // after the benchmark's ResetTimer, which clears metrics
		b.ReportMetric(float64(n), "workers")
		b.ReportMetric(float64(conc), "queue-concurrency")
		b.ReportMetric(float64(size), "pool-conns")
		b.ReportMetric(float64(claimers), "tick-claimers")
		b.ReportMetric(float64(batch), "tick-batch")
	}
}

// loadAverage returns the one-minute load average (0 if unreadable).
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	return f
}
