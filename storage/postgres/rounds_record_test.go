package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
)

// TestRecordLooksUpEachWakeupByKey: right after a burst the statistics
// say few wake-ups are queued. Record's update is then still planned
// through the primary key, not through the partial index of queued
// wake-ups (which would filter every queued wake-up of the tenant for
// each outcome); and a set of mixed outcomes lands each on its own
// wake-up, only while it is queued.
func TestRecordLooksUpEachWakeupByKey(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	ctx := context.Background()
	rs := postgres.NewRoundsStore(f.db)
	a := seedAcmeRound(t, f, rs)
	// A burst falls due before the table's statistics are first taken
	// (or retaken): ANALYZE has not seen these rows.
	_, err := f.db.Pool.Exec(ctx, `INSERT INTO wakeups (tenant_id, id, agent_id, task_id, reason, state)
		SELECT $1, gen_random_uuid(), $2, $3, 'reminder', 'queued' FROM generate_series(1, 2000)`,
		f.a.ID, f.agentA.ID, a.wakeup.TaskID)
	require.NoError(t, err)

	conn, err := f.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	// The plan a prepared statement settles on after its first runs.
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `PREPARE record_outcome(uuid, uuid, text, text, bool, text, timestamptz, bool) AS `+postgres.RecordOutcome)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, fmt.Sprintf(`EXPLAIN EXECUTE record_outcome('%s', '%s', 'delivered', '', false, 'worker-a', NULL, false)`, f.a.ID, a.wakeup.ID))
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.Contains(t, plan, "wakeups_pkey", "each outcome is looked up by its primary key:\n%s", plan)
	require.NotContains(t, plan, "wakeups_by_task", plan)
	_, err = conn.Exec(ctx, `DEALLOCATE record_outcome`)
	require.NoError(t, err)

	ids := make([]uuid.UUID, 8)
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT array_agg(id) FROM (SELECT id FROM wakeups WHERE tenant_id = $1 AND state = 'queued' LIMIT 8) s`,
		f.a.ID).Scan(&ids))
	_, err = f.db.Pool.Exec(ctx, `UPDATE wakeups SET leased_by = CASE WHEN id = $3 THEN 'worker-b' ELSE 'worker-a' END,
			next_attempt_at = now() + interval '1 minute'
		WHERE tenant_id = $1 AND id = ANY($2)`, f.a.ID, ids, ids[6])
	require.NoError(t, err)
	_, err = f.db.Pool.Exec(ctx, `UPDATE wakeups SET state = 'handed_out' WHERE tenant_id = $1 AND id = $2`, f.a.ID, ids[5])
	require.NoError(t, err)
	retry := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	require.NoError(t, rs.Record(ctx, []rounds.Outcome{
		{TenantID: f.a.ID, ID: ids[0], Worker: "worker-a", State: rounds.Delivered},
		{TenantID: f.a.ID, ID: ids[1], Worker: "worker-a", Error: "the runtime answered HTTP 503", Retry: retry},
		{TenantID: f.a.ID, ID: ids[2], Worker: "worker-a", Error: "the runtime did not answer in time", Dead: true},
		{TenantID: f.a.ID, ID: ids[3], Worker: "worker-a", State: rounds.Ready},
		{TenantID: f.a.ID, ID: ids[4], Worker: "worker-a", State: rounds.Cancelled},
		{TenantID: f.a.ID, ID: ids[5], Worker: "worker-a", State: rounds.Delivered}, // no longer queued: left alone
		{TenantID: f.a.ID, ID: ids[6], Worker: "worker-a", State: rounds.Delivered}, // leased to another worker: left alone
		{TenantID: f.a.ID, ID: ids[7], Worker: "worker-a", Release: true, Error: "stopped"},
	}))
	want := []struct {
		state    rounds.State
		attempts int
		err      string
		leased   string
	}{
		{rounds.Delivered, 1, "", ""},
		{rounds.Queued, 1, "the runtime answered HTTP 503", ""},
		{rounds.Dead, 1, "the runtime did not answer in time", ""},
		{rounds.Ready, 0, "", ""},
		{rounds.Cancelled, 0, "", ""},
		{rounds.HandedOut, 0, "", "worker-a"},
		{rounds.Queued, 0, "", "worker-b"},
		{rounds.Queued, 0, "", ""},
	}
	for i, id := range ids {
		w, err := rs.Wakeup(ctx, f.a.ID, id)
		require.NoError(t, err)
		require.Equal(t, want[i].state, w.State, "outcome %d", i)
		require.Equal(t, want[i].attempts, w.Attempts, "outcome %d", i)
		require.Equal(t, want[i].err, w.LastError, "outcome %d", i)
		require.Equal(t, want[i].state == rounds.Delivered, w.DeliveredAt != nil, "outcome %d", i)
		var leased *string
		var next time.Time
		require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT leased_by, next_attempt_at FROM wakeups WHERE tenant_id = $1 AND id = $2`,
			f.a.ID, id).Scan(&leased, &next))
		require.Equal(t, want[i].leased, deref(leased), "outcome %d", i)
		switch i {
		case 1:
			require.True(t, next.Equal(retry), "a failed push is due again at its retry: %s", next)
		case 7:
			require.True(t, next.Before(time.Now().Add(time.Second)), "a released wake-up is due at once: %s", next)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestClaimDueFindsItsRowsWithoutScanningTheTable: right after a burst,
// with stale statistics, the claim still finds due wake-ups through
// wakeups_due and updates each where it lies (a TID scan), never with a
// scan of the whole table, and reads what each joins by key.
func TestClaimDueFindsItsRowsWithoutScanningTheTable(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	ctx := context.Background()
	rs := postgres.NewRoundsStore(f.db)
	a := seedAcmeRound(t, f, rs)
	_, err := f.db.Pool.Exec(ctx, `ANALYZE wakeups`)
	require.NoError(t, err)
	_, err = f.db.Pool.Exec(ctx, `INSERT INTO wakeups (tenant_id, id, agent_id, task_id, reason, state)
		SELECT $1, gen_random_uuid(), $2, $3, 'reminder', 'queued' FROM generate_series(1, 5000)`,
		f.a.ID, f.agentA.ID, a.wakeup.TaskID)
	require.NoError(t, err)

	conn, err := f.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `PREPARE claim_due(int, text, float8) AS `+postgres.ClaimDue)
	require.NoError(t, err)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF) EXECUTE claim_due(500, 'worker-a', 120)`)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.Contains(t, plan, "wakeups_due", "due wake-ups are found through their index:\n%s", plan)
	require.Contains(t, plan, "Tid Scan on wakeups", "each is updated where it lies:\n%s", plan)
	require.NotContains(t, plan, "Seq Scan on wakeups", plan)
	require.Contains(t, plan, "rows=500 loops=1", plan)
}
