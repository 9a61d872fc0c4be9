package responsibilities_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
)

// nextTick reads the responsibility's armed tick (nil: none).
func (f *fixture) nextTick(t *testing.T, r responsibilities.Responsibility) *time.Time {
	t.Helper()
	var at *time.Time
	require.NoError(t, f.db.Pool.QueryRow(f.ctx, `SELECT next_tick_at FROM responsibilities WHERE tenant_id = $1 AND id = $2`,
		r.TenantID, r.ID).Scan(&at))
	return at
}

// due brings the responsibilities' ticks to the fixture's clock, as if
// their time came.
func (f *fixture) due(t *testing.T, rs ...responsibilities.Responsibility) {
	t.Helper()
	for _, r := range rs {
		_, err := f.db.Pool.Exec(f.ctx, `UPDATE responsibilities SET next_tick_at = $3 WHERE tenant_id = $1 AND id = $2`,
			r.TenantID, r.ID, f.clock())
		require.NoError(t, err)
	}
}

// tick fires the due ticks as a worker does and returns how many it
// claimed.
func (f *fixture) tick(t *testing.T) int {
	t.Helper()
	n, err := f.svc.FireDueTicks(f.ctx, 100)
	require.NoError(t, err)
	return n
}

func (f *fixture) onlySkip(t *testing.T, r responsibilities.Responsibility) responsibilities.Skip {
	t.Helper()
	ks, err := f.store.Skips(f.ctx, r.TenantID, r.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, ks, 1)
	return ks[0]
}

// TestCreatingArmsTheFirstTickAndAChangeRearmsIt: the tick sits on the
// row in the tenant's time zone; pausing clears it, resuming arms it in
// the new epoch, and a schedule past stop_at arms none.
func TestCreatingArmsTheFirstTickAndAChangeRearmsIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	at := f.nextTick(t, r)
	require.NotNil(t, at)
	require.Equal(t, 9, at.UTC().Hour(), "09:00 in UTC (the tenant sets no zone)")
	require.True(t, at.After(time.Now()))

	up := f.operatorChange(t, r, func(r *responsibilities.Responsibility) { r.Status = responsibilities.Paused })
	require.Nil(t, f.nextTick(t, up), "a paused responsibility holds no tick")
	up = f.operatorChange(t, up, func(r *responsibilities.Responsibility) { r.Status = responsibilities.Active })
	require.Equal(t, at.UTC(), f.nextTick(t, up).UTC())

	soon := time.Now().Add(time.Minute)
	short := f.resp(t, f.bobID, func(r *responsibilities.Responsibility) { r.StopAt = &soon; r.Schedule = "0 0 1 1 *" })
	require.Nil(t, f.nextTick(t, short), "no time before stop_at")
	none := f.resp(t, f.bobID, func(r *responsibilities.Responsibility) { r.Schedule = "" })
	require.Nil(t, f.nextTick(t, none))
}

// TestDueTicksOpenRunsInOneSet: one call opens the run of every due tick
// (its task, its round, the previous run closed and its rounds ended),
// arms each next tick after now, leaves ticks not yet due alone, and
// claims nothing the second time.
func TestDueTicksOpenRunsInOneSet(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rounder := &endings{}
	f.svc.SetRounds(rounder)
	a, b := f.resp(t, f.adaID), f.resp(t, f.bobID)
	later := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.Name = "later" })
	old := f.open(t, a, responsibilities.ByOperator)
	f.advance(time.Minute)
	f.due(t, a, b)
	require.Equal(t, 2, f.tick(t))
	require.Zero(t, f.tick(t), "each tick fires once")

	for _, r := range []responsibilities.Responsibility{a, b} {
		runs, err := f.store.Runs(f.ctx, r.TenantID, r.ID, nil, 10)
		require.NoError(t, err)
		run := runs[0]
		require.Equal(t, responsibilities.BySchedule, run.Reason)
		require.Equal(t, r.Epoch, run.Epoch)
		require.Equal(t, f.clock(), run.OpenedAt.UTC())
		task, err := postgres.NewBoardStore(f.db).Task(f.ctx, r.TenantID, run.TaskID)
		require.NoError(t, err)
		require.Equal(t, r.AgentID, task.AssigneeID)
		require.Equal(t, r.ID, task.OriginID)
		w, err := postgres.NewRoundsStore(f.db).Wakeup(f.ctx, r.TenantID, run.WakeupID)
		require.NoError(t, err)
		require.Equal(t, rounds.Queued, w.State)
		require.Equal(t, run.TaskID, w.TaskID)
		next := f.nextTick(t, r)
		require.NotNil(t, next)
		require.True(t, next.After(f.clock()), "the next tick is after now")
		require.Equal(t, 9, next.UTC().Hour())
	}
	prev, err := f.store.Runs(f.ctx, a.TenantID, a.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, prev, 2)
	require.Equal(t, old.ID, prev[1].ID)
	require.NotNil(t, prev[1].ClosedAt, "the previous run closed")
	require.Equal(t, []uuid.UUID{old.TaskID}, rounder.tasks, "and its rounds ended")
	runs, err := f.store.Runs(f.ctx, later.TenantID, later.ID, nil, 10)
	require.NoError(t, err)
	require.Empty(t, runs, "a tick not yet due is left")
}

// endings records the tasks whose rounds were ended.
type endings struct{ tasks []uuid.UUID }

func (e *endings) EndRounds(_ context.Context, _, taskID, _ uuid.UUID) error {
	e.tasks = append(e.tasks, taskID)
	return nil
}

// TestDueTicksKeepWindowLimitsSpendCapsAndGates: in one set, a tick over
// its window's run limit (pending follow-ups held), one over its spend
// cap, one past stop_at and one of an inactive owner each record a skip
// with its cause and open nothing, beside one that opens; every one of
// them arms its next tick (none past stop_at).
func TestDueTicksKeepWindowLimitsSpendCapsAndGates(t *testing.T) {
	t.Parallel()
	f := setup(t)
	opens := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.Name = "opens" })
	full := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.Name = "full"; r.RunLimit = 2 })
	f.open(t, full, responsibilities.ByOperator)
	_, err := f.svc.Followup(f.ctx, f.ada, full.ID, f.clock().Add(time.Hour)) // holds the window's second place
	require.NoError(t, err)
	spent := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.Name = "spent"; r.SpendCapCents = 100 })
	run := f.open(t, spent, responsibilities.ByOperator)
	_, err = f.svc.ReportSpend(f.ctx, f.acme.ID, f.adaID, run.TaskID, 100)
	require.NoError(t, err)
	stop := f.clock().Add(time.Second)
	stopping := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) {
		r.Name = "stopping"
		r.StopAt = &stop
		r.Schedule = "* * * * *"
	})
	orphan := f.resp(t, f.bobID, func(r *responsibilities.Responsibility) { r.Name = "orphan" })
	_, _, err = postgres.NewIdentityStore(f.db).UpdateAgent(f.ctx, f.acme.ID, f.bobID, func(a *identity.Agent) error {
		a.Status = identity.AgentTrashed
		now := time.Now()
		a.TrashedAt = &now
		return nil
	})
	require.NoError(t, err)

	f.due(t, opens, full, spent, stopping, orphan)
	f.advance(2 * time.Second) // past stopping's stop_at
	require.Equal(t, 5, f.tick(t))

	runs, err := f.store.Runs(f.ctx, opens.TenantID, opens.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	for r, cause := range map[*responsibilities.Responsibility]responsibilities.SkipCause{
		&full: responsibilities.OverRunLimit, &spent: responsibilities.OverSpendCap,
		&stopping: responsibilities.PastStopAt, &orphan: responsibilities.OwnerInactive,
	} {
		k := f.onlySkip(t, *r)
		require.Equal(t, cause, k.Cause, "%s: %s", r.Name, k.Detail)
		require.Equal(t, responsibilities.BySchedule, k.Reason)
		require.Equal(t, r.Epoch, k.Epoch)
		runs, err := f.store.Runs(f.ctx, r.TenantID, r.ID, nil, 10)
		require.NoError(t, err)
		require.Len(t, runs, map[string]int{"full": 1, "spent": 1}[r.Name], "%s opened no run", r.Name)
	}
	require.Nil(t, f.nextTick(t, stopping), "nothing is left before stop_at")
	require.NotNil(t, f.nextTick(t, full), "a skipped tick still arms the next")
	require.NotNil(t, f.nextTick(t, orphan))
}

// TestATickTellsTheSettledQuestionsOnce: the run a tick opens carries the
// questions settled since the last run, and marks them told in the same
// transaction; a skipped tick tells nothing.
func TestATickTellsTheSettledQuestionsOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.RunLimit = 100 })
	f.open(t, r, responsibilities.ByOperator)
	_, err := f.svc.Ask(f.ctx, f.ada, r.ID, responsibilities.NewQuestion{Text: "Which vendor?", TTL: new(time.Minute)})
	require.NoError(t, err)
	f.advance(2 * time.Minute)
	ws, err := f.store.OpenQuestions(f.ctx, r.TenantID, r.ID, nil, 10)
	require.NoError(t, err)
	_, err = f.svc.FireWakeup(f.ctx, r.TenantID, ws[0].ID) // it expires
	require.NoError(t, err)

	f.due(t, r)
	require.Equal(t, 1, f.tick(t))
	runs, err := f.store.Runs(f.ctx, r.TenantID, r.ID, nil, 1)
	require.NoError(t, err)
	data := f.roundData(t, runs[0])
	require.Len(t, data, 1)
	require.Contains(t, data[0].Text, `state="expired"`)

	f.advance(time.Minute)
	f.due(t, r)
	require.Equal(t, 1, f.tick(t))
	runs, err = f.store.Runs(f.ctx, r.TenantID, r.ID, nil, 1)
	require.NoError(t, err)
	require.Empty(t, f.roundData(t, runs[0]), "told once")
}
