package worker_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/worker"
)

func (e *responsibilityEnv) nextTick(t *testing.T, r responsibilities.Responsibility) *time.Time {
	t.Helper()
	var at *time.Time
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT next_tick_at FROM responsibilities WHERE tenant_id = $1 AND id = $2`,
		r.TenantID, r.ID).Scan(&at))
	return at
}

func (e *responsibilityEnv) bringForward(t *testing.T, r responsibilities.Responsibility, at time.Time) {
	t.Helper()
	_, err := e.db.Pool.Exec(e.ctx, `UPDATE responsibilities SET next_tick_at = $3 WHERE tenant_id = $1 AND id = $2`, r.TenantID, r.ID, at)
	require.NoError(t, err)
}

// countingFirer counts the ticks a worker's claimers took.
type countingFirer struct {
	worker.TickFirer
	claimed atomic.Int64
}

func (c *countingFirer) FireDueTicks(ctx context.Context, limit int) (int, error) {
	n, err := c.TickFirer.FireDueTicks(ctx, limit)
	c.claimed.Add(int64(n))
	return n, err
}

// ticker starts a worker process's tick claimers on db (its own pool, as
// another process has) with sets of batch (the default if zero), and
// returns the count of ticks it claimed.
func (e *responsibilityEnv) ticker(t testing.TB, db *postgres.DB, batch int) *countingFirer {
	t.Helper()
	store := postgres.NewResponsibilityStore(db)
	svc := responsibilities.NewService(store, agents.NewDelegation(postgres.NewIdentityStore(db)))
	svc.SetQuestions(store)
	svc.SetSchedules(store)
	c := &countingFirer{TickFirer: svc}
	d := &worker.TickDispatcher{Responsibilities: c, Every: 50 * time.Millisecond, Batch: batch, Log: slog.New(slog.DiscardHandler)}
	require.NoError(t, d.Start(e.ctx))
	t.Cleanup(d.Stop)
	return c
}

// process opens a pool of its own on the env's database, as a second
// worker process would.
func (e *responsibilityEnv) process(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(e.ctx, e.db.Pool.Config().ConnString(), func(c *pgxpool.Config) { c.MaxConns = 4 })
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}

// hourly inserts n active responsibilities of the env's employee on
// schedule (hourly if empty) whose ticks are due at at.
func (e *responsibilityEnv) hourly(t testing.TB, n int, at time.Time, schedule ...string) {
	t.Helper()
	sched := "0 * * * *"
	if len(schedule) > 0 {
		sched = schedule[0]
	}
	_, err := e.db.Pool.Exec(e.ctx, `INSERT INTO responsibilities (tenant_id, id, agent_id, name, schedule, period_secs, run_limit,
			followup_limit, spend_cap_cents, min_wake_interval_secs, created_by, next_tick_at)
		SELECT $1, gen_random_uuid(), $2, 'resp ' || i, $5, 3600, 10, 4, 100000, 300, 'operator:test', $4
		FROM generate_series(1, $3) i`, e.tenant.ID, e.agent.ID, n, at, sched)
	require.NoError(t, err)
}

// TestTwoWorkersOpenEachTickOnce: two worker processes, two claimers
// each, take a burst of due ticks in small sets: every responsibility
// opens exactly one run, with one task and one round, the claims add up
// to the burst, and every next tick is the next hour.
func TestTwoWorkersOpenEachTickOnce(t *testing.T) {
	t.Parallel()
	e := newResponsibilityEnv(t)
	const n = 600
	due := time.Now().Add(500 * time.Millisecond)
	e.hourly(t, n, due)
	a, b := e.ticker(t, e.process(t), 20), e.ticker(t, e.process(t), 20)
	count := func(q string) int {
		var c int
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, q, e.tenant.ID).Scan(&c))
		return c
	}
	testsignal.Until(t, 60*time.Second, 100*time.Millisecond, "every tick opened", func() bool {
		return count(`SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1`) >= n && a.claimed.Load()+b.claimed.Load() >= n
	})
	// Nothing is due any more, so no later claim can add a run: the counts
	// below are final.
	require.Zero(t, count(`SELECT count(*) FROM responsibilities WHERE tenant_id = $1 AND next_tick_at <= now()`))
	require.Equal(t, n, count(`SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1`))
	require.Equal(t, n, count(`SELECT count(DISTINCT responsibility_id) FROM responsibility_runs WHERE tenant_id = $1`))
	require.Equal(t, n, count(`SELECT count(*) FROM tasks WHERE tenant_id = $1 AND origin_id IS NOT NULL`))
	require.Equal(t, n, count(`SELECT count(*) FROM wakeups WHERE tenant_id = $1`))
	require.Zero(t, count(`SELECT count(*) FROM responsibility_skips WHERE tenant_id = $1`))
	require.EqualValues(t, n, a.claimed.Load()+b.claimed.Load(), "no tick was claimed twice")
	t.Logf("worker a claimed %d, worker b %d", a.claimed.Load(), b.claimed.Load())
	next := due.Truncate(time.Hour).Add(time.Hour)
	require.Equal(t, n, count(`SELECT count(*) FROM responsibilities WHERE tenant_id = $1 AND next_tick_at = '`+next.UTC().Format(time.RFC3339)+`'`))
}

// TestAChangeDuringABurstMovesTheTickToTheNewEpoch: operators change
// responsibilities while workers claim their due ticks: each opens at
// most one run, and a run opened after the change is in the new epoch.
func TestAChangeDuringABurstMovesTheTickToTheNewEpoch(t *testing.T) {
	t.Parallel()
	e := newResponsibilityEnv(t)
	const n = 300
	e.hourly(t, n, time.Now().Add(300*time.Millisecond))
	rows, err := e.db.Pool.Query(e.ctx, `SELECT id FROM responsibilities WHERE tenant_id = $1 LIMIT 40`, e.tenant.ID)
	require.NoError(t, err)
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	e.ticker(t, e.process(t), 25)
	e.ticker(t, e.process(t), 25)
	count := func(q string) int {
		var c int
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, q, e.tenant.ID).Scan(&c))
		return c
	}
	// The changes land while the workers are claiming: once the first
	// runs have opened.
	testsignal.Until(t, 60*time.Second, 10*time.Millisecond, "the burst started", func() bool {
		return count(`SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1`) > 0
	})
	name := "changed"
	for _, id := range ids {
		_, err := e.svc.Update(e.ctx, e.tenant.ID, id, "", responsibilities.Change{Name: &name})
		require.NoError(t, err)
	}
	testsignal.Until(t, 60*time.Second, 50*time.Millisecond, "every due tick claimed", func() bool {
		return count(`SELECT count(*) FROM responsibilities WHERE tenant_id = $1 AND next_tick_at <= now()`) == 0
	})
	var bad int
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM (
			SELECT responsibility_id FROM responsibility_runs WHERE tenant_id = $1 GROUP BY 1 HAVING count(*) > 1) x`, e.tenant.ID).Scan(&bad))
	require.Zero(t, bad, "no responsibility opened two runs")
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM responsibility_runs rr JOIN responsibilities r
			ON r.tenant_id = rr.tenant_id AND r.id = rr.responsibility_id
		WHERE rr.tenant_id = $1 AND rr.epoch <> r.epoch AND rr.opened_at > r.updated_at`, e.tenant.ID).Scan(&bad))
	require.Zero(t, bad, "a run opened after a change is in its epoch")
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM responsibilities
		WHERE tenant_id = $1 AND (next_tick_at IS NULL OR next_tick_at <= now())`, e.tenant.ID).Scan(&bad))
	require.Zero(t, bad, "every responsibility holds its next tick")
}
