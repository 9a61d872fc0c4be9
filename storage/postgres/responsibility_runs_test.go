package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/responsibilities"
)

// The two-tenant cases of the run methods, walked by
// TestEveryResponsibilityStoreMethodIsTenantIsolated.
func init() {
	respIsolation["StartRun"] = func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.StartRun(context.Background(), f.b.ID, a.resp.ID,
			func(responsibilities.Opening) (*responsibilities.RunPlan, *responsibilities.Skip, error) {
				t.Error("StartRun planned on another tenant's responsibility")
				return nil, nil, nil
			})
		notFound(t, err, "StartRun")
	}
	respIsolation["ReportSpend"] = func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.ReportSpend(context.Background(), f.b.ID, a.run.ID, 5)
		notFound(t, err, "ReportSpend")
		u, err := f.rs.Usage(context.Background(), f.a.ID, a.resp.ID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, u.SpendCents, "ReportSpend added to tenant A's run")
	}
	respIsolation["AgentSpend"] = func(t *testing.T, f respFixture, a respRows) {
		ctx := context.Background()
		_, err := f.rs.ReportSpend(ctx, f.a.ID, a.run.ID, 250)
		require.NoError(t, err)
		from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		cents, err := f.rs.AgentSpend(ctx, f.a.ID, f.agentA.ID, from, to)
		require.NoError(t, err)
		require.EqualValues(t, 250, cents, "tenant A's employee's spend")
		cents, err = f.rs.AgentSpend(ctx, f.a.ID, f.agentA.ID, to, to.Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, cents, "a run opened before the range")
		cents, err = f.rs.AgentSpend(ctx, f.b.ID, f.agentA.ID, from, to)
		require.NoError(t, err)
		require.Zero(t, cents, "AgentSpend summed tenant A's runs from tenant B")
	}
	respIsolation["Runs"] = func(t *testing.T, f respFixture, a respRows) {
		rs, err := f.rs.Runs(context.Background(), f.b.ID, a.resp.ID, nil, 100)
		require.NoError(t, err)
		require.Empty(t, rs, "Runs listed tenant A's runs")
	}
	respIsolation["Skips"] = func(t *testing.T, f respFixture, a respRows) {
		ctx := context.Background()
		_, err := f.rs.StartRun(ctx, f.a.ID, a.resp.ID, func(o responsibilities.Opening) (*responsibilities.RunPlan, *responsibilities.Skip, error) {
			return nil, &responsibilities.Skip{ID: uuid.New(), Reason: responsibilities.BySchedule, Cause: responsibilities.OverRunLimit,
				Detail: "full", Epoch: o.Responsibility.Epoch, At: time.Now()}, nil
		})
		require.Error(t, err, "a skip answers a SkipError")
		ks, err := f.rs.Skips(ctx, f.a.ID, a.resp.ID, nil, 100)
		require.NoError(t, err)
		require.Len(t, ks, 1, "tenant A reads its own skip")
		ks, err = f.rs.Skips(ctx, f.b.ID, a.resp.ID, nil, 100)
		require.NoError(t, err)
		require.Empty(t, ks, "Skips listed tenant A's skips")
	}
	respIsolation["RunTaskOf"] = func(t *testing.T, f respFixture, a respRows) {
		ctx := context.Background()
		task, in, err := f.rs.RunTaskOf(ctx, f.a.ID, f.agentA.ID, a.run.TaskID)
		require.NoError(t, err)
		require.True(t, in, "tenant A's round on its run's task is inside the run")
		require.Equal(t, a.run.TaskID, task)
		_, in, err = f.rs.RunTaskOf(ctx, f.b.ID, f.agentA.ID, a.run.TaskID)
		require.NoError(t, err)
		require.False(t, in, "RunTaskOf found tenant A's run from tenant B")
		_, in, err = f.rs.RunTaskOf(ctx, f.b.ID, f.agentB.ID, a.run.TaskID)
		require.NoError(t, err)
		require.False(t, in, "RunTaskOf found tenant A's run for tenant B's employee")
		_, in, err = f.rs.RunTaskOf(ctx, f.b.ID, uuid.Nil, a.run.TaskID)
		require.NoError(t, err)
		require.False(t, in, "RunTaskOf for any employee of tenant B found tenant A's run")
	}
}
