package responsibilities_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/storage/postgres"
)

// TestSubscribedEventsOpenRunsAndTheRunsTaskClosesIt: finishing a run's
// task closes the run; a subscribed event on a task under it then opens a
// run for the event, and an unsubscribed one does not.
func TestSubscribedEventsOpenRunsAndTheRunsTaskClosesIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	idStore := postgres.NewIdentityStore(f.db)
	bs := board.NewService(board.Deps{Store: postgres.NewBoardStore(f.db), Relations: agents.NewDelegation(idStore),
		Directory: idStore, Runs: f.svc})
	r := f.resp(t, f.adaID, func(r *responsibilities.Responsibility) { r.Subscriptions = []string{"task_unblocked"} })
	run := f.open(t, r, responsibilities.BySchedule)
	op := board.Operator(identity.Principal{TenantID: f.acme.ID, Kind: identity.KindOperator, CredentialID: "key:op"}, f.acme)
	waiting, err := bs.CreateTask(f.ctx, op, board.NewTask{Title: "wait on the vendor", Parent: run.TaskID, ParentGiven: true, Assignee: f.adaID})
	require.NoError(t, err)
	other, err := bs.CreateTask(f.ctx, op, board.NewTask{Title: "file it", Parent: run.TaskID, ParentGiven: true, Assignee: f.adaID})
	require.NoError(t, err)
	_, err = bs.Block(f.ctx, op, waiting.ID, "the vendor has not answered")
	require.NoError(t, err)

	_, err = bs.Complete(f.ctx, op, run.TaskID, "done for today")
	require.NoError(t, err)
	_, err = f.store.OpenRunOf(f.ctx, f.acme.ID, r.ID)
	require.Error(t, err, "finishing the run's task closed the run")
	runs, err := f.store.Runs(f.ctx, f.acme.ID, r.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.True(t, runs[0].NotCounted, "closed without a spend report")

	_, err = bs.Complete(f.ctx, op, other.ID, "filed")
	require.NoError(t, err)
	runs, err = f.store.Runs(f.ctx, f.acme.ID, r.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1, "task_done is not subscribed: no run")

	f.advance(time.Minute) // the event's run opens after the first
	open := board.Open
	_, err = bs.UpdateTask(f.ctx, op, waiting.ID, board.Change{Status: &open})
	require.NoError(t, err)
	runs, err = f.store.Runs(f.ctx, f.acme.ID, r.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, runs, 2, "task_unblocked is subscribed: a run opened")
	require.Equal(t, responsibilities.ByEvent, runs[0].Reason)
	require.Nil(t, runs[0].ClosedAt)
}
