package responsibilities_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
)

func (f *fixture) open(t *testing.T, r responsibilities.Responsibility, reason responsibilities.RunReason) responsibilities.Run {
	t.Helper()
	run, err := f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: reason})
	require.NoError(t, err)
	return run
}

// skipped asserts that err is a recorded skip with cause, and returns it.
func (f *fixture) skipped(t *testing.T, r responsibilities.Responsibility, err error, cause responsibilities.SkipCause) responsibilities.Skip {
	t.Helper()
	var skip *responsibilities.SkipError
	require.True(t, errors.As(err, &skip), "want a skip (%s), got %v", cause, err)
	require.Equal(t, cause, skip.Skip.Cause, skip.Skip.Detail)
	ks, err := f.store.Skips(f.ctx, r.TenantID, r.ID, nil, 100)
	require.NoError(t, err)
	i := slices.IndexFunc(ks, func(k responsibilities.Skip) bool { return k.ID == skip.Skip.ID })
	require.GreaterOrEqual(t, i, 0, "the skip is recorded")
	require.Equal(t, cause, ks[i].Cause)
	return ks[i]
}

func TestARunIsATaskAndARoundOfTheOwner(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	answer := rounds.Data{Label: "answer from an operator", Author: "operator:k", Text: "ship it"}
	run, err := f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.ByAnswer, Epoch: r.Epoch,
		Data: []rounds.Data{answer}})
	require.NoError(t, err)
	require.Equal(t, f.clock(), run.OpenedAt.UTC(), "a run opens at the service's clock")
	require.Equal(t, responsibilities.ByAnswer, run.Reason)

	task, err := postgres.NewBoardStore(f.db).Task(f.ctx, f.acme.ID, run.TaskID)
	require.NoError(t, err)
	require.Equal(t, f.adaID, task.AssigneeID)
	require.Equal(t, board.FromResponsibility, task.Origin)
	require.Equal(t, r.ID, task.OriginID)
	require.Equal(t, board.Open, task.Status)

	w, err := postgres.NewRoundsStore(f.db).Wakeup(f.ctx, f.acme.ID, run.WakeupID)
	require.NoError(t, err)
	require.Equal(t, rounds.Responsibility, w.Reason)
	require.Equal(t, f.adaID, w.AgentID)
	require.Equal(t, run.TaskID, w.TaskID, "the round works on the run's task")
	require.Equal(t, []rounds.Data{answer}, w.Data, "an operator's text reaches the round as data")

	// A second wake-up closes the open run first: one open run at a time.
	f.advance(time.Minute)
	next := f.open(t, r, responsibilities.BySchedule)
	runs, err := f.store.Runs(f.ctx, f.acme.ID, r.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, next.ID, runs[0].ID)
	require.Nil(t, runs[0].ClosedAt)
	require.NotNil(t, runs[1].ClosedAt, "the earlier run was closed")
	require.True(t, runs[1].NotCounted, "its runtime reported nothing")
}

func TestTheRunLimitHoldsPerWindow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID) // 3 runs per one-day window anchored an hour ago
	for range 3 {
		f.open(t, r, responsibilities.BySchedule)
		f.advance(time.Hour)
	}
	_, err := f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.BySchedule})
	skip := f.skipped(t, r, err, responsibilities.OverRunLimit)
	require.Equal(t, responsibilities.BySchedule, skip.Reason)
	sum, err := f.svc.Get(f.ctx, f.op, r.ID)
	require.NoError(t, err)
	require.Equal(t, 3, sum.Window.Runs, "a skipped wake-up is not a run")

	// The window ends 24h after the anchor: one hour ago + 24h.
	f.advance(20*time.Hour - time.Second)
	_, err = f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.ByOperator})
	f.skipped(t, r, err, responsibilities.OverRunLimit)
	f.advance(time.Second)
	f.open(t, r, responsibilities.ByOperator)
}

func TestAPendingFollowupHoldsItsPlaceInTheWindow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.RunLimit = 2 })
	f.open(t, r, responsibilities.BySchedule)
	_, err := f.svc.Followup(f.ctx, f.ada, r.ID, f.clock().Add(time.Hour))
	require.NoError(t, err)
	// One run opened, one reserved by the follow-up: a schedule may not take it.
	_, err = f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.BySchedule})
	f.skipped(t, r, err, responsibilities.OverRunLimit)
	// The follow-up itself opens its run.
	f.advance(time.Hour)
	f.open(t, r, responsibilities.ByFollowup)
}

func TestTheSpendCapHoldsPerWindowAndCountsReports(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.RunLimit = 100 }) // cap 500 cents
	run := f.open(t, r, responsibilities.BySchedule)
	_, err := f.svc.ReportSpend(f.ctx, f.acme.ID, f.adaID, run.TaskID, 300)
	require.NoError(t, err)
	got, err := f.svc.ReportSpend(f.ctx, f.acme.ID, f.adaID, run.TaskID, 150)
	require.NoError(t, err)
	require.Equal(t, int64(450), *got.CostCents)
	require.Equal(t, 2, got.Reports)

	f.open(t, r, responsibilities.BySchedule) // 450 < 500: still opens
	sum, err := f.svc.Get(f.ctx, f.op, r.ID)
	require.NoError(t, err)
	require.Equal(t, int64(450), sum.Window.SpendCents)
	require.Equal(t, 2, sum.Window.Runs)

	_, err = f.svc.ReportSpend(f.ctx, f.acme.ID, f.adaID, sum.OpenRun.TaskID, 50)
	require.NoError(t, err)
	_, err = f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.ByAnswer})
	f.skipped(t, r, err, responsibilities.OverSpendCap)

	f.advance(23 * time.Hour) // the next window starts with nothing spent
	f.open(t, r, responsibilities.BySchedule)
}

func TestARunWithoutReportsClosesAsCostNotCounted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	silent := f.open(t, r, responsibilities.BySchedule)
	closed, err := f.svc.CloseRun(f.ctx, f.acme.ID, silent.ID)
	require.NoError(t, err)
	require.True(t, closed.NotCounted)
	require.Nil(t, closed.CostCents)

	reported := f.open(t, r, responsibilities.BySchedule)
	_, err = f.svc.ReportSpend(f.ctx, f.acme.ID, f.adaID, reported.TaskID, 0)
	require.NoError(t, err, "a report of nothing spent is still a report")
	closed, err = f.svc.CloseRun(f.ctx, f.acme.ID, reported.ID)
	require.NoError(t, err)
	require.False(t, closed.NotCounted)
	require.Equal(t, int64(0), *closed.CostCents)

	_, err = f.svc.CloseRun(f.ctx, f.acme.ID, reported.ID)
	require.True(t, fault.Is(err, fault.Conflict), "closing twice: %v", err)
	sum, err := f.svc.Get(f.ctx, f.op, r.ID)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Window.CostNotCounted)
}

func TestOnlyTheOwnersRunRoundReportsSpend(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	run := f.open(t, r, responsibilities.BySchedule)
	for name, c := range map[string]struct {
		tenant, agent, task uuid.UUID
		cents               int64
		want                fault.Code
	}{
		"another employee":      {f.acme.ID, f.bobID, run.TaskID, 1, fault.Forbidden},
		"a task of no run":      {f.acme.ID, f.adaID, uuid.New(), 1, fault.NotFound},
		"another tenant":        {f.globex.ID, f.adaID, run.TaskID, 1, fault.NotFound},
		"a negative amount":     {f.acme.ID, f.adaID, run.TaskID, -1, fault.Invalid},
		"an outsized amount":    {f.acme.ID, f.adaID, run.TaskID, responsibilities.MaxSpendReport + 1, fault.Invalid},
		"globex's own employee": {f.globex.ID, f.gilID, run.TaskID, 1, fault.NotFound},
	} {
		_, err := f.svc.ReportSpend(f.ctx, c.tenant, c.agent, c.task, c.cents)
		require.Equal(t, c.want, fault.CodeOf(err), "%s: %v", name, err)
	}
	runs, err := f.store.Runs(f.ctx, f.acme.ID, r.ID, nil, 10)
	require.NoError(t, err)
	require.Nil(t, runs[0].CostCents, "no refused report counted")
}

func TestStatusStopAtEpochAndOwnerGateRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.resp(t, f.adaID)
	paused := responsibilities.Paused
	up := f.operatorChange(t, r, func(r *responsibilities.Responsibility) { r.Status = paused })
	_, err := f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.BySchedule})
	f.skipped(t, r, err, responsibilities.NotActiveNow)

	up = f.operatorChange(t, up, func(r *responsibilities.Responsibility) { r.Status = responsibilities.Active })
	_, err = f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.ByFollowup, Epoch: up.Epoch - 1})
	skip := f.skipped(t, r, err, responsibilities.OlderEpoch)
	require.Equal(t, up.Epoch, skip.Epoch)
	f.open(t, r, responsibilities.ByFollowup) // epoch 0: no epoch to match

	f.advance(10*24*time.Hour + time.Second) // past stop_at
	_, err = f.svc.OpenRun(f.ctx, r.TenantID, r.ID, responsibilities.Wake{Reason: responsibilities.BySchedule})
	f.skipped(t, r, err, responsibilities.PastStopAt)

	other := f.resp(t, f.bobID, func(r *responsibilities.Responsibility) { r.StopAt = nil })
	_, _, err = postgres.NewIdentityStore(f.db).UpdateAgent(f.ctx, f.acme.ID, f.bobID, func(a *identity.Agent) error {
		a.Status = identity.AgentTrashed
		now := time.Now()
		a.TrashedAt = &now
		return nil
	})
	require.NoError(t, err)
	_, err = f.svc.OpenRun(f.ctx, other.TenantID, other.ID, responsibilities.Wake{Reason: responsibilities.BySchedule})
	f.skipped(t, other, err, responsibilities.OwnerInactive)

	_, err = f.svc.OpenRun(f.ctx, f.globex.ID, r.ID, responsibilities.Wake{Reason: responsibilities.BySchedule})
	require.True(t, fault.Is(err, fault.NotFound), "another tenant's responsibility: %v", err)
	_, err = f.svc.OpenRun(f.ctx, f.acme.ID, r.ID, responsibilities.Wake{Reason: "whim"})
	require.True(t, fault.Is(err, fault.Invalid), "an unknown reason: %v", err)
}

func TestTasksCreatedInARunGoUnderItsTask(t *testing.T) {
	t.Parallel()
	f := setup(t)
	idStore := postgres.NewIdentityStore(f.db)
	bs := board.NewService(board.Deps{Store: postgres.NewBoardStore(f.db), Relations: agents.NewDelegation(idStore),
		Directory: idStore, Runs: f.svc})
	r := f.resp(t, f.adaID)
	run := f.open(t, r, responsibilities.BySchedule)
	round := func(agent *identityAgent, task uuid.UUID) board.Actor {
		return board.Actor{Principal: identity.Principal{TenantID: f.acme.ID, Kind: identity.KindEmployee, AgentID: agent.id,
			CredentialID: "round:" + uuid.NewString(), TaskID: task, Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: f.acme,
			Agent: agent.agent, MCP: true}
	}
	ada := &identityAgent{id: f.adaID, agent: f.ada.Agent}
	in, err := bs.CreateTask(f.ctx, round(ada, run.TaskID), board.NewTask{Title: "step one"})
	require.NoError(t, err)
	require.Equal(t, run.TaskID, in.ParentID, "no parent given: under the run's task")

	// A round on a task under the run is still inside it.
	deeper, err := bs.CreateTask(f.ctx, round(ada, in.ID), board.NewTask{Title: "step two"})
	require.NoError(t, err)
	require.Equal(t, in.ID, deeper.ParentID)
	_, err = bs.CreateTask(f.ctx, round(ada, in.ID), board.NewTask{Title: "beside", Parent: run.TaskID, ParentGiven: true})
	require.NoError(t, err, "the run's own task is a parent inside the run")

	outside, err := bs.CreateTask(f.ctx, board.Operator(identity.Principal{TenantID: f.acme.ID, Kind: identity.KindOperator,
		CredentialID: "key:op"}, f.acme), board.NewTask{Title: "elsewhere", Assignee: f.adaID})
	require.NoError(t, err)
	_, err = bs.CreateTask(f.ctx, round(ada, run.TaskID), board.NewTask{Title: "escape", Parent: outside.ID, ParentGiven: true})
	require.Error(t, err, "a parent outside the run is refused")

	// A round of another employee on the run's task is no round of the run.
	bob := &identityAgent{id: f.bobID, agent: f.bob.Agent}
	free, err := bs.CreateTask(f.ctx, round(bob, outside.ID), board.NewTask{Title: "bob's"})
	require.NoError(t, err)
	require.Equal(t, uuid.Nil, free.ParentID, "outside any run a round sets no parent")
}

type identityAgent struct {
	id    uuid.UUID
	agent *identity.Agent
}
