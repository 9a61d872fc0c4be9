package worker_test

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/worker"
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

// BenchmarkHourlyTicks: VISOR_BENCH_RESPONSIBILITIES (10,000 if unset) active
// responsibilities, their ticks all due at the same instant (as at the top
// of the hour), worked by VISOR_BENCH_WORKERS worker processes (1 if
// unset; see burstWorkers). Their schedule is "0 0 1 1 *" so that the next
// ticks they arm never fall due inside the benchmark (an hourly one fired
// again when a run crossed the top of the hour).
// It reports the lateness of the runs (opened_at minus the tick's time)
// at p50, p99 and max, how long the hour's runs took to open, and the
// Postgres load: transactions and rows written per run, transactions per
// second while the ticks were worked. Run with -benchtime=1x.
func BenchmarkHourlyTicks(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("VISOR_BENCH_RESPONSIBILITIES")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		benchTicks(b, n)
	}
}

func benchTicks(b *testing.B, n int) {
	b.Helper()
	e := newResponsibilityEnv(b)
	_, err := e.db.Pool.Exec(e.ctx, `INSERT INTO responsibilities (tenant_id, id, agent_id, name, schedule, period_secs, run_limit,
			followup_limit, spend_cap_cents, min_wake_interval_secs, created_by)
		SELECT $1, gen_random_uuid(), $2, 'resp ' || i, '0 0 1 1 *', 3600, 10, 4, 100000, 300, 'operator:bench'
		FROM generate_series(1, $3) i`, e.tenant.ID, e.agent.ID, n)
	require.NoError(b, err)
	rows, err := e.db.Pool.Query(e.ctx, `SELECT id FROM responsibilities WHERE tenant_id = $1`, e.tenant.ID)
	require.NoError(b, err)
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		require.NoError(b, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(b, rows.Err())

	ins, report := e.burstWorkers(b)
	due := time.Now().Add(45 * time.Second).Truncate(time.Second).UTC()
	for start := 0; start < len(ids); start += 1000 {
		var params []river.InsertManyParams
		for _, id := range ids[start:min(start+1000, len(ids))] {
			params = append(params, river.InsertManyParams{Args: worker.ResponsibilityTickArgs{TenantID: e.tenant.ID, ResponsibilityID: id, Epoch: 1, At: due},
				InsertOpts: &river.InsertOpts{Queue: worker.ResponsibilityQueue, ScheduledAt: due, UniqueOpts: river.UniqueOpts{ByArgs: true}}})
		}
		_, err := ins.InsertMany(e.ctx, params)
		require.NoError(b, err)
	}
	require.True(b, time.Now().Before(due), "the ticks were inserted after their time; lateness would include the insert")
	// Sleep, not a signal: the benchmark measures lateness against the
	// wall clock, so it starts at the ticks' due time.
	time.Sleep(time.Until(due))
	loadStart := loadAverage()
	before := e.pgStats(b)
	b.ResetTimer()
	count := func() int {
		var c int
		require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1`, e.tenant.ID).Scan(&c))
		return c
	}
	testsignal.Until(b, 10*time.Minute, 200*time.Millisecond, "every tick ran", func() bool { return count() >= n })
	b.StopTimer()
	report()
	b.ReportMetric(loadStart, "load-start")
	b.ReportMetric(loadAverage(), "load-end")
	after := e.pgStats(b)
	var p50, p99, worst, span float64
	require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT
			percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM opened_at - $2)),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM opened_at - $2)),
			max(extract(epoch FROM opened_at - $2)), extract(epoch FROM max(opened_at) - min(opened_at))
		FROM responsibility_runs WHERE tenant_id = $1 AND reason = $3`, e.tenant.ID, due, responsibilities.BySchedule).
		Scan(&p50, &p99, &worst, &span))
	var pending int
	require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM river_job WHERE kind = 'responsibility_tick' AND state = 'scheduled'`).Scan(&pending))
	require.Equal(b, n, pending, "every tick armed the next hour's")
	wall := max(worst, 0.001)
	b.ReportMetric(float64(n), "responsibilities")
	b.ReportMetric(p50*1000, "late-p50-ms")
	b.ReportMetric(p99*1000, "late-p99-ms")
	b.ReportMetric(worst*1000, "late-max-ms")
	b.ReportMetric(float64(after.xacts-before.xacts)/float64(n), "pg-xacts/run")
	b.ReportMetric(float64(after.xacts-before.xacts)/wall, "pg-xacts/s")
	b.ReportMetric(float64(after.inserted+after.updated-before.inserted-before.updated)/float64(n), "pg-rows-written/run")
	b.ReportMetric(float64(n)/wall, "runs/s")
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
// case. VISOR_BENCH_RESPONSIBILITIES (10,000 if unset) hourly responsibilities at
// distinct minutes and seconds arrive at one tick every 3600/n seconds;
// the benchmark plays VISOR_BENCH_SPREAD_SECS (180 if unset) of that hour
// — the same arrival rate, n × secs / 3600 ticks — on one worker and
// reports each run's lateness after its own tick at p50, p99 and max.
// Run with -benchtime=1x.
func BenchmarkSpreadTicks(b *testing.B) {
	n, secs := 10000, 180
	if v, err := strconv.Atoi(os.Getenv("VISOR_BENCH_RESPONSIBILITIES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("VISOR_BENCH_SPREAD_SECS")); err == nil && v > 0 {
		secs = v
	}
	for range b.N {
		benchSpread(b, n, secs)
	}
}

func benchSpread(b *testing.B, perHour, secs int) {
	b.Helper()
	e := newResponsibilityEnv(b)
	n := max(perHour*secs/3600, 1)
	_, err := e.db.Pool.Exec(e.ctx, `INSERT INTO responsibilities (tenant_id, id, agent_id, name, schedule, period_secs, run_limit,
			followup_limit, spend_cap_cents, min_wake_interval_secs, created_by)
		SELECT $1, gen_random_uuid(), $2, 'resp ' || i, '0 * * * *', 3600, 10, 4, 100000, 300, 'operator:bench'
		FROM generate_series(1, $3) i`, e.tenant.ID, e.agent.ID, n)
	require.NoError(b, err)
	rows, err := e.db.Pool.Query(e.ctx, `SELECT id FROM responsibilities WHERE tenant_id = $1`, e.tenant.ID)
	require.NoError(b, err)
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		require.NoError(b, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(b, rows.Err())

	ins := e.runner(b).Client()
	start := time.Now().Add(20 * time.Second).UTC()
	every := time.Hour / time.Duration(perHour)
	at := map[uuid.UUID]time.Time{}
	var params []river.InsertManyParams
	for i, id := range ids {
		due := start.Add(time.Duration(i) * every)
		at[id] = due
		params = append(params, river.InsertManyParams{Args: worker.ResponsibilityTickArgs{TenantID: e.tenant.ID, ResponsibilityID: id, Epoch: 1, At: due},
			InsertOpts: &river.InsertOpts{Queue: worker.ResponsibilityQueue, ScheduledAt: due, UniqueOpts: river.UniqueOpts{ByArgs: true}}})
	}
	_, err = ins.InsertMany(e.ctx, params)
	require.NoError(b, err)
	require.True(b, time.Now().Before(start), "the ticks were inserted after their time")
	b.ResetTimer()
	count := func() int {
		var c int
		require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1`, e.tenant.ID).Scan(&c))
		return c
	}
	testsignal.Until(b, 10*time.Minute, 200*time.Millisecond, "every tick ran", func() bool { return count() >= n })
	b.StopTimer()
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
	b.ReportMetric(float64(perHour), "responsibilities/h")
	b.ReportMetric(float64(n), "ticks")
	b.ReportMetric(ms(late[len(late)/2]), "late-p50-ms")
	b.ReportMetric(ms(late[len(late)*99/100]), "late-p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "late-max-ms")
}
