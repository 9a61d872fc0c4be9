package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/worker"
)

// responsibilityEnv is one database with a tenant, an employee, the responsibility
// service, and as many job runners (workers) as a test starts on it.
type responsibilityEnv struct {
	ctx    context.Context
	db     *postgres.DB
	store  *postgres.ResponsibilityStore
	svc    *responsibilities.Service
	jobs   *worker.ResponsibilityJobs
	tenant identity.Tenant
	agent  identity.Agent
}

func newResponsibilityEnv(t testing.TB) *responsibilityEnv {
	t.Helper()
	e := &responsibilityEnv{ctx: context.Background(), db: pgtest.New(t)}
	idStore := postgres.NewIdentityStore(e.db)
	ids := identity.NewService(idStore, changes.Discard{}, slog.New(slog.DiscardHandler))
	e.store = postgres.NewResponsibilityStore(e.db)
	e.svc = responsibilities.NewService(e.store, agents.NewDelegation(idStore))
	e.svc.SetQuestions(e.store)
	e.svc.SetSchedules(e.store)
	e.jobs = &worker.ResponsibilityJobs{}
	e.store.SetJobs(e.jobs)
	var err error
	e.tenant, err = ids.CreateTenant(e.ctx, "acme", "Acme")
	require.NoError(t, err)
	e.agent, err = ids.CreateAgent(e.ctx, e.tenant.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	return e
}

// runner starts a worker process's job runner on the env's database.
func (e *responsibilityEnv) runner(t testing.TB) *worker.Runner {
	t.Helper()
	reg := worker.NewRegistry()
	// Pushes retry quickly here; the delays themselves are River's.
	worker.RegisterResponsibilitiesWith(reg, e.svc, worker.ResponsibilityOptions{Concurrency: 4, Backoff: func(int) time.Duration { return 100 * time.Millisecond }})
	r, err := worker.NewRunner(e.db.Pool, reg, worker.Options{Logger: slog.New(slog.DiscardHandler), Concurrency: 2, DrainTimeout: 5 * time.Second})
	require.NoError(t, err)
	if e.jobs.Client == nil {
		e.jobs.Client = r.Client()
	}
	require.NoError(t, r.Start(e.ctx))
	t.Cleanup(r.Stop)
	return r
}

// responsibility creates an active responsibility with an open run.
func (e *responsibilityEnv) responsibility(t testing.TB) responsibilities.Responsibility {
	t.Helper()
	r, err := e.svc.Create(e.ctx, e.tenant.ID, "", "operator:k", responsibilities.Draft{AgentID: e.agent.ID, Name: "watch",
		PeriodSecs: 3600, RunLimit: 50, SpendCapCents: 1000, MinWakeIntervalSecs: 60})
	require.NoError(t, err)
	_, err = e.svc.OpenRun(e.ctx, e.tenant.ID, r.ID, responsibilities.Wake{Reason: responsibilities.ByOperator})
	require.NoError(t, err)
	return r
}

// arm writes a follow-up of r due at due from its open run, with its job,
// as responsibility_followup does (the minimum interval is the tool's rule,
// tested with the tool).
func (e *responsibilityEnv) arm(t *testing.T, r responsibilities.Responsibility, due time.Time) responsibilities.Wakeup {
	t.Helper()
	w, err := e.store.Arm(e.ctx, r.TenantID, r.ID, func(a responsibilities.Armer) (*responsibilities.Wakeup, error) {
		if a.OpenRun == nil {
			return nil, errors.New("no open run")
		}
		return &responsibilities.Wakeup{ID: uuid.New(), RunID: a.OpenRun.ID, Kind: responsibilities.Followup,
			Epoch: a.Responsibility.Epoch, DueAt: due, CreatedBy: "agent:ada"}, nil
	})
	require.NoError(t, err)
	return w
}

func (e *responsibilityEnv) runs(t *testing.T, r responsibilities.Responsibility, reason responsibilities.RunReason) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1 AND responsibility_id = $2 AND reason = $3`,
		r.TenantID, r.ID, reason).Scan(&n))
	return n
}

// why lists the causes of r's skips, for failure messages.
func (e *responsibilityEnv) why(t *testing.T, r responsibilities.Responsibility) []string {
	t.Helper()
	ks, err := e.store.Skips(e.ctx, r.TenantID, r.ID, nil, 10)
	require.NoError(t, err)
	var out []string
	for _, k := range ks {
		out = append(out, string(k.Cause)+": "+k.Detail)
	}
	return out
}

func (e *responsibilityEnv) state(t *testing.T, w responsibilities.Wakeup) responsibilities.WakeupState {
	t.Helper()
	got, err := e.store.Wakeup(e.ctx, w.TenantID, w.ID)
	require.NoError(t, err)
	return got.State
}

// TestTwoWorkersFireEachWakeupOnce: two worker processes on one database,
// each arming the same wake-ups' jobs again (as two serve replicas racing
// would): every follow-up opens exactly one run.
func TestTwoWorkersFireEachWakeupOnce(t *testing.T) {
	t.Parallel()
	e := newResponsibilityEnv(t)
	a, b := e.runner(t), e.runner(t)
	const n = 12
	due := time.Now().Add(1500 * time.Millisecond)
	var rs []responsibilities.Responsibility
	var ws []responsibilities.Wakeup
	for range n {
		r := e.responsibility(t)
		rs = append(rs, r)
		ws = append(ws, e.arm(t, r, due))
	}
	// Both workers' clients try to arm every job once more, concurrently:
	// uniqueness by arguments keeps one job per wake-up.
	var wg sync.WaitGroup
	for _, c := range []*worker.Runner{a, b} {
		for _, w := range ws {
			wg.Go(func() {
				tx, err := e.db.Pool.Begin(e.ctx)
				if err != nil {
					t.Error(err)
					return
				}
				defer tx.Rollback(e.ctx) //nolint:errcheck
				if err := (worker.ResponsibilityJobs{Client: c.Client()}).ArmWakeupTx(e.ctx, tx, w); err != nil {
					t.Error(err)
					return
				}
				if err := tx.Commit(e.ctx); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	var jobs int
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM river_job WHERE kind = 'responsibility_wakeup'`).Scan(&jobs))
	require.Equal(t, n, jobs, "one job per wake-up")

	for i, w := range ws {
		require.Eventually(t, func() bool { return e.runs(t, rs[i], responsibilities.ByFollowup) == 1 }, 20*time.Second, 50*time.Millisecond,
			"the follow-up opened one run; skips: %v", e.why(t, rs[i]))
		require.Equal(t, responsibilities.Fired, e.state(t, w))
	}
	require.Eventually(t, func() bool {
		var done int
		_ = e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM river_job WHERE kind = 'responsibility_wakeup' AND state = 'completed'`).Scan(&done)
		return done == n
	}, 10*time.Second, 50*time.Millisecond)
	for i := range rs {
		require.Equal(t, 1, e.runs(t, rs[i], responsibilities.ByFollowup), "no second run")
	}
}

// TestARestartedWorkerLosesNoWakeup: a worker stopped while wake-ups are
// scheduled hands nothing to memory; another started later fires them all.
func TestARestartedWorkerLosesNoWakeup(t *testing.T) {
	t.Parallel()
	e := newResponsibilityEnv(t)
	first := e.runner(t)
	const n = 8
	due := time.Now().Add(time.Hour)
	var rs []responsibilities.Responsibility
	for range n {
		r := e.responsibility(t)
		rs = append(rs, r)
		e.arm(t, r, due)
	}
	first.Stop()
	// Their time comes while no worker runs: the clock is not waited for,
	// the jobs are made due.
	_, err := e.db.Pool.Exec(e.ctx, `UPDATE river_job SET scheduled_at = now() WHERE kind = 'responsibility_wakeup'`)
	require.NoError(t, err)
	for _, r := range rs {
		require.Zero(t, e.runs(t, r, responsibilities.ByFollowup), "nothing fired with the worker stopped")
	}
	e.runner(t)
	for _, r := range rs {
		require.Eventually(t, func() bool { return e.runs(t, r, responsibilities.ByFollowup) == 1 }, 20*time.Second, 50*time.Millisecond)
	}
}

// TestAnOperatorChangeCancelsPendingWakeups: pausing cancels the pending
// follow-up and its job; a job armed in an older epoch that fires anyway
// opens no run and is recorded as epoch_changed.
func TestAnOperatorChangeCancelsPendingWakeups(t *testing.T) {
	t.Parallel()
	e := newResponsibilityEnv(t)
	e.runner(t)

	paused := e.responsibility(t)
	w := e.arm(t, paused, time.Now().Add(time.Hour))
	st := responsibilities.Paused
	_, err := e.svc.Update(e.ctx, e.tenant.ID, paused.ID, "", responsibilities.Change{Status: &st})
	require.NoError(t, err)
	require.Equal(t, responsibilities.Cancelled, e.state(t, w))
	var jobState string
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT state FROM river_job WHERE kind = 'responsibility_wakeup' AND args->>'wakeup_id' = $1`,
		w.ID.String()).Scan(&jobState))
	require.Equal(t, "cancelled", jobState)

	// A wake-up still pending from an older epoch (its cancel raced the
	// change) fires as epoch_changed.
	old := e.responsibility(t)
	w = e.arm(t, old, time.Now().Add(time.Second))
	_, err = e.db.Pool.Exec(e.ctx, `UPDATE responsibilities SET epoch = epoch + 1 WHERE tenant_id = $1 AND id = $2`, old.TenantID, old.ID)
	require.NoError(t, err)
	var skips []responsibilities.Skip
	require.Eventually(t, func() bool {
		skips, err = e.store.Skips(e.ctx, old.TenantID, old.ID, nil, 10)
		return err == nil && len(skips) == 1
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, responsibilities.OlderEpoch, skips[0].Cause)
	require.Equal(t, responsibilities.Fired, e.state(t, w))
	require.Zero(t, e.runs(t, old, responsibilities.ByFollowup), "no run opened")
}

// TestAScheduledTickOpensARunAndArmsTheNext: a responsibility with a
// schedule holds its next tick on its row; when it comes a worker's
// claimer opens a run (reason schedule) and arms the next hour; a change
// re-arms the tick, and the run it opens is in the new epoch.
func TestAScheduledTickOpensARunAndArmsTheNext(t *testing.T) {
	t.Parallel()
	e := newResponsibilityEnv(t)
	e.runner(t)
	e.ticker(t, e.db, 0)
	r, err := e.svc.Create(e.ctx, e.tenant.ID, "", "operator:k", responsibilities.Draft{AgentID: e.agent.ID, Name: "hourly",
		Schedule: "0 * * * *", RunLimit: 50, SpendCapCents: 1000})
	require.NoError(t, err)
	first := e.nextTick(t, r)
	require.NotNil(t, first, "creating it armed the first tick")
	require.Zero(t, first.Minute())
	require.True(t, first.After(time.Now()))

	// Bring the tick forward (as if its hour came): it opens a run and
	// arms the same next hour.
	e.bringForward(t, r, time.Now().Add(300*time.Millisecond))
	require.Eventually(t, func() bool { return e.runs(t, r, responsibilities.BySchedule) == 1 }, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, first.UTC(), e.nextTick(t, r).UTC(), "the fired tick armed the next hour")

	name := "hourly watch"
	r2, err := e.svc.Update(e.ctx, r.TenantID, r.ID, "", responsibilities.Change{Name: &name})
	require.NoError(t, err)
	require.Equal(t, first.UTC(), e.nextTick(t, r2).UTC())
	e.bringForward(t, r2, time.Now())
	require.Eventually(t, func() bool { return e.runs(t, r, responsibilities.BySchedule) == 2 }, 20*time.Second, 50*time.Millisecond)
	runs, err := e.store.Runs(e.ctx, r.TenantID, r.ID, nil, 1)
	require.NoError(t, err)
	require.Equal(t, r2.Epoch, runs[0].Epoch)
}
