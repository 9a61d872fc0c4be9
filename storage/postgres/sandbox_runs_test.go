package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/sandbox"
	"github.com/visorhq/visor/storage/postgres"
)

// TestSandboxRunLog: a run is logged running, then ended once; lists are
// newest first by keyset, in flight lists only recent running ones; each
// tenant keeps its newest MaxLogged; tenant B neither reads nor ends
// tenant A's runs.
func TestSandboxRunLog(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	log := postgres.NewSandboxRunStore(f.db)
	now := time.Now().UTC().Truncate(time.Microsecond)
	run := func(tenant uuid.UUID, at time.Time) sandbox.Run {
		r := sandbox.Run{TenantID: tenant, ID: uuid.New(), Principal: "agent:" + f.agentA.ID.String(), AgentID: f.agentA.ID,
			Image: "python:3.12", Language: sandbox.Python, StartedAt: at}
		require.NoError(t, log.StartRun(ctx, r))
		return r
	}
	old := run(f.a.ID, now.Add(-2*time.Hour))
	done := run(f.a.ID, now.Add(-time.Minute))
	live := run(f.a.ID, now)

	done.State, done.ExitCode, done.RunMS, done.WaitedMS, done.Worker, done.EndedAt = sandbox.RunFinished, 2, 150, 30, "w1", &now
	theirs := done
	theirs.TenantID, theirs.State = f.b.ID, sandbox.RunFailed
	require.NoError(t, log.EndRun(ctx, theirs))
	require.NoError(t, log.EndRun(ctx, done))
	again := done
	again.State = sandbox.RunCancelled
	require.NoError(t, log.EndRun(ctx, again))

	all, err := log.Runs(ctx, f.a.ID, sandbox.RunFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.Equal(t, []uuid.UUID{live.ID, done.ID, old.ID}, []uuid.UUID{all[0].ID, all[1].ID, all[2].ID})
	got := all[1]
	require.Equal(t, sandbox.RunFinished, got.State, "a run ends once; tenant B's end changed nothing")
	require.Equal(t, 2, got.ExitCode)
	require.EqualValues(t, 150, got.RunMS)
	require.EqualValues(t, 30, got.WaitedMS)
	require.Equal(t, f.agentA.ID, got.AgentID)
	require.Equal(t, sandbox.Python, got.Language)

	page, err := log.Runs(ctx, f.a.ID, sandbox.RunFilter{Limit: 10, After: &sandbox.RunPosition{At: done.StartedAt, ID: done.ID}})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, old.ID, page[0].ID)
	flying, err := log.Runs(ctx, f.a.ID, sandbox.RunFilter{InFlight: true, StartedAfter: now.Add(-time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Len(t, flying, 1, "the old running row is not in flight")
	require.Equal(t, live.ID, flying[0].ID)

	none, err := log.Runs(ctx, f.b.ID, sandbox.RunFilter{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, none, "tenant B reads none of tenant A's runs")

	for i := range sandbox.MaxLogged {
		run(f.b.ID, now.Add(-time.Duration(i)*time.Second))
	}
	newest := run(f.b.ID, now.Add(time.Second))
	kept, err := log.Runs(ctx, f.b.ID, sandbox.RunFilter{Limit: sandbox.MaxLogged + 10})
	require.NoError(t, err)
	require.Len(t, kept, sandbox.MaxLogged, "a tenant keeps its newest runs")
	require.Equal(t, newest.ID, kept[0].ID)
	mine, err := log.Runs(ctx, f.a.ID, sandbox.RunFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, mine, 3, "another tenant's bound drops none of tenant A's")
}
