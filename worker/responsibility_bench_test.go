package worker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/tools"
)

// pgStats is the database's commit and row counters (pg_stat_database).
type pgStats struct{ xacts, inserted, updated, fetched int64 }

func (e *responsibilityEnv) pgStats(b *testing.B) pgStats {
	b.Helper()
	var s pgStats
	require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT xact_commit + xact_rollback, tup_inserted, tup_updated, tup_fetched
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.xacts, &s.inserted, &s.updated, &s.fetched))
	return s
}

// BenchmarkHourlyTicks: VISOR_BENCH_RESPONSIBILITIES (10,000 if unset)
// active hourly responsibilities, their ticks all due at the same instant
// (the top of the hour), claimed by VISOR_BENCH_WORKERS worker processes
// (1 if unset; see burstWorkers). It reports the lateness of the runs
// (opened_at minus the tick's time) at p50, p99 and max, when the last
// run was committed (all-open-ms, after the tick's time; polled every
// 20 ms), runs a second over that time, and the Postgres load:
// transactions and rows written per run. Run with -benchtime=1x.
//
// The responsibilities are hourly in all but their next tick: their
// schedule is yearly so that the ticks they arm never fall due inside the
// benchmark (an hourly one fires again when the benchmark crosses the top
// of the hour).
func BenchmarkHourlyTicks(b *testing.B) {
	n := benchEnv("VISOR_BENCH_RESPONSIBILITIES", 10000)
	for range b.N {
		benchTicks(b, n)
	}
}

// yearly is the benchmarks' schedule: its next tick is months away.
const yearly = "0 0 1 1 *"

func benchTicks(b *testing.B, n int) {
	b.Helper()
	e := newResponsibilityEnv(b)
	due := time.Now().Add(15 * time.Second).Truncate(time.Second).UTC()
	e.hourly(b, n, due, yearly)
	report := e.burstWorkers(b)
	require.True(b, time.Now().Before(due), "the workers started after the ticks' time; lateness would include the start")
	count := func() int {
		var c int
		require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1`, e.tenant.ID).Scan(&c))
		return c
	}
	// Sleep, not a signal: the benchmark measures lateness against the
	// wall clock, so it starts just before the ticks' due time.
	time.Sleep(time.Until(due) - 200*time.Millisecond)
	loadStart := loadAverage()
	before := e.pgStats(b)
	b.ResetTimer()
	testsignal.Until(b, 10*time.Minute, 20*time.Millisecond, "every tick ran", func() bool { return count() >= n })
	allOpen := time.Since(due)
	b.StopTimer()
	report()
	b.ReportMetric(loadStart, "load-start")
	b.ReportMetric(loadAverage(), "load-end")
	after := e.pgStats(b)
	var p50, p99, worst float64
	require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT
			percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM opened_at - $2)),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM opened_at - $2)),
			max(extract(epoch FROM opened_at - $2))
		FROM responsibility_runs WHERE tenant_id = $1 AND reason = $3`, e.tenant.ID, due, responsibilities.BySchedule).
		Scan(&p50, &p99, &worst))
	var armed, runs int
	require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FILTER (WHERE next_tick_at > $2) FROM responsibilities WHERE tenant_id = $1`,
		e.tenant.ID, due).Scan(&armed))
	require.Equal(b, n, armed, "every tick armed the next hour's")
	require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT count(DISTINCT responsibility_id) FROM responsibility_runs WHERE tenant_id = $1`,
		e.tenant.ID).Scan(&runs))
	require.Equal(b, n, runs, "one run per responsibility")
	b.ReportMetric(float64(n), "responsibilities")
	b.ReportMetric(p50*1000, "late-p50-ms")
	b.ReportMetric(p99*1000, "late-p99-ms")
	b.ReportMetric(worst*1000, "late-max-ms")
	b.ReportMetric(float64(allOpen.Milliseconds()), "all-open-ms")
	b.ReportMetric(float64(after.xacts-before.xacts)/float64(n), "pg-xacts/run")
	b.ReportMetric(float64(after.inserted+after.updated-before.inserted-before.updated)/float64(n), "pg-rows-written/run")
	b.ReportMetric(float64(n)/allOpen.Seconds(), "runs/s")
}

// BenchmarkFollowupCall: the cost of one responsibility_followup as the
// service answers it (the row lock, the window's usage, the insert of the
// wake-up and of its job, one transaction), reported at p50 and p99. The
// armed follow-up is cancelled between calls, outside the timer.
func BenchmarkFollowupCall(b *testing.B) {
	e := newResponsibilityEnv(b)
	e.runner(b)
	r := e.responsibility(b)
	sub := &tools.Subject{Principal: identity.Principal{TenantID: e.tenant.ID, Kind: identity.KindEmployee, AgentID: e.agent.ID,
		CredentialID: "key:ada", Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: e.tenant, Agent: &e.agent}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		_, err := e.svc.Followup(e.ctx, sub, r.ID, start.Add(time.Duration(10+i%30)*time.Minute))
		took = append(took, time.Since(start))
		b.StopTimer()
		require.NoError(b, err)
		_, err = e.db.Pool.Exec(e.ctx, `UPDATE responsibility_wakeups SET state = 'cancelled', settled_at = now()
			WHERE tenant_id = $1 AND responsibility_id = $2 AND state = 'pending'`, r.TenantID, r.ID)
		require.NoError(b, err)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkSpreadTicks: schedules spread over the hour, the realistic
// case. VISOR_BENCH_RESPONSIBILITIES (10,000 if unset) hourly
// responsibilities at distinct minutes and seconds arrive at one tick
// every 3600/n seconds; the benchmark plays VISOR_BENCH_SPREAD_SECS (180 if
// unset) of that hour — the same arrival rate, n × secs / 3600 ticks — on
// one worker (burstWorkers) and reports each run's lateness after its own
// tick at p50, p99 and max. Run with -benchtime=1x.
// Their schedule is yearly for the reason BenchmarkHourlyTicks gives.
func BenchmarkSpreadTicks(b *testing.B) {
	n, secs := benchEnv("VISOR_BENCH_RESPONSIBILITIES", 10000), benchEnv("VISOR_BENCH_SPREAD_SECS", 180)
	for range b.N {
		benchSpread(b, n, secs)
	}
}

func benchSpread(b *testing.B, perHour, secs int) {
	b.Helper()
	e := newResponsibilityEnv(b)
	n := max(perHour*secs/3600, 1)
	start := time.Now().Add(10 * time.Second).UTC()
	every := time.Hour / time.Duration(perHour)
	_, err := e.db.Pool.Exec(e.ctx, `INSERT INTO responsibilities (tenant_id, id, agent_id, name, schedule, period_secs, run_limit,
			followup_limit, spend_cap_cents, min_wake_interval_secs, created_by, next_tick_at)
		SELECT $1, gen_random_uuid(), $2, 'resp ' || i, '0 0 1 1 *', 3600, 10, 4, 100000, 300, 'operator:bench', $4::timestamptz + (i - 1) * $5::interval
		FROM generate_series(1, $3) i`, e.tenant.ID, e.agent.ID, n, start, every)
	require.NoError(b, err)
	at := map[uuid.UUID]time.Time{}
	rows, err := e.db.Pool.Query(e.ctx, `SELECT id, next_tick_at FROM responsibilities WHERE tenant_id = $1`, e.tenant.ID)
	require.NoError(b, err)
	for rows.Next() {
		var id uuid.UUID
		var due time.Time
		require.NoError(b, rows.Scan(&id, &due))
		at[id] = due
	}
	require.NoError(b, rows.Err())
	report := e.burstWorkers(b)
	require.True(b, time.Now().Before(start), "the workers started after the first tick")
	loadStart := loadAverage()
	b.ResetTimer()
	count := func() int {
		var c int
		require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1`, e.tenant.ID).Scan(&c))
		return c
	}
	testsignal.Until(b, 10*time.Minute, 200*time.Millisecond, "every tick ran", func() bool { return count() >= n })
	b.StopTimer()
	report()
	runs, err := e.db.Pool.Query(e.ctx, `SELECT responsibility_id, opened_at FROM responsibility_runs WHERE tenant_id = $1`, e.tenant.ID)
	require.NoError(b, err)
	var late []time.Duration
	for runs.Next() {
		var id uuid.UUID
		var opened time.Time
		require.NoError(b, runs.Scan(&id, &opened))
		late = append(late, opened.Sub(at[id]))
	}
	require.NoError(b, runs.Err())
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(loadStart, "load-start")
	b.ReportMetric(loadAverage(), "load-end")
	b.ReportMetric(float64(perHour), "responsibilities/h")
	b.ReportMetric(float64(n), "ticks")
	b.ReportMetric(ms(late[len(late)/2]), "late-p50-ms")
	b.ReportMetric(ms(late[len(late)*99/100]), "late-p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "late-max-ms")
}
