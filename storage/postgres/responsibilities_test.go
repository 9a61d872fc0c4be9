package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/storage/postgres"
)

type respFixture struct {
	boardFixture
	rs *postgres.ResponsibilityStore
}

func respSetup(t *testing.T) respFixture {
	t.Helper()
	f := boardSetup(t)
	return respFixture{boardFixture: f, rs: postgres.NewResponsibilityStore(f.db)}
}

func newResp(tenant, agent uuid.UUID) *responsibilities.Responsibility {
	return &responsibilities.Responsibility{ID: uuid.New(), TenantID: tenant, AgentID: agent, Name: "watch", Charter: "watch the queue",
		Schedule: "@hourly", PeriodSecs: 86400, RunLimit: 5, FollowupLimit: 3, SpendCapCents: 1000, MinWakeIntervalSecs: 300,
		Subscriptions: []string{"task.unblocked"}, Status: responsibilities.Active, CreatedBy: "operator:k"}
}

func followup(run responsibilities.Run, due time.Time) func(responsibilities.Armer) (*responsibilities.Wakeup, error) {
	return func(a responsibilities.Armer) (*responsibilities.Wakeup, error) {
		if a.Live != nil {
			return nil, fault.New(fault.Conflict, "live")
		}
		return &responsibilities.Wakeup{ID: uuid.New(), RunID: run.ID, Kind: responsibilities.Followup, Epoch: a.Responsibility.Epoch,
			DueAt: due, CreatedBy: "agent:x"}, nil
	}
}

// respRows are tenant A's records: a responsibility with an open run on a
// task and a pending follow-up.
type respRows struct {
	resp   *responsibilities.Responsibility
	run    *responsibilities.Run
	wakeup responsibilities.Wakeup
}

func seedResp(t *testing.T, f respFixture) respRows {
	t.Helper()
	ctx := context.Background()
	r := newResp(f.a.ID, f.agentA.ID)
	require.NoError(t, f.rs.CreateResponsibility(ctx, r))
	tk := newTask(f.a.ID, f.agentA.ID, "run")
	require.NoError(t, f.bs.CreateTask(ctx, tk, board.Effects{}, 0))
	run := &responsibilities.Run{ID: uuid.New(), TenantID: f.a.ID, ResponsibilityID: r.ID, TaskID: tk.ID, Reason: responsibilities.BySchedule}
	require.NoError(t, f.rs.OpenRun(ctx, run))
	w, err := f.rs.Arm(ctx, f.a.ID, r.ID, followup(*run, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	return respRows{resp: r, run: run, wakeup: w}
}

func respIntact(t *testing.T, f respFixture, a respRows, method string) {
	t.Helper()
	ctx := context.Background()
	r, err := f.rs.Responsibility(ctx, f.a.ID, a.resp.ID)
	require.NoError(t, err, "%s deleted tenant A's responsibility", method)
	require.Equal(t, a.resp.Epoch, r.Epoch, "%s changed tenant A's responsibility", method)
	require.Equal(t, a.resp.Name, r.Name, "%s changed tenant A's responsibility", method)
	run, err := f.rs.OpenRunOf(ctx, f.a.ID, a.resp.ID)
	require.NoError(t, err, "%s closed tenant A's run", method)
	require.Equal(t, a.run.ID, run.ID)
	w, err := f.rs.LiveWakeup(ctx, f.a.ID, a.resp.ID)
	require.NoError(t, err, "%s settled tenant A's wake-up", method)
	require.Equal(t, a.wakeup.ID, w.ID)
}

var respIsolation = map[string]func(t *testing.T, f respFixture, a respRows){
	"CreateResponsibility": func(t *testing.T, f respFixture, a respRows) {
		require.Error(t, f.rs.CreateResponsibility(context.Background(), newResp(f.b.ID, f.agentA.ID)), "a responsibility for another tenant's employee")
	},
	"Responsibility": func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.Responsibility(context.Background(), f.b.ID, a.resp.ID)
		notFound(t, err, "Responsibility")
	},
	"ListResponsibilities": func(t *testing.T, f respFixture, a respRows) {
		for _, flt := range []responsibilities.Filter{{Limit: 100}, {Agent: f.agentA.ID, Limit: 100}} {
			rs, err := f.rs.ListResponsibilities(context.Background(), f.b.ID, flt)
			require.NoError(t, err)
			for _, r := range rs {
				require.Equal(t, f.b.ID, r.TenantID, "ListResponsibilities %+v returned tenant A's row", flt)
			}
		}
	},
	"UpdateResponsibility": func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.UpdateResponsibility(context.Background(), f.b.ID, a.resp.ID, func(r *responsibilities.Responsibility) error {
			r.Name = "taken"
			return nil
		})
		notFound(t, err, "UpdateResponsibility")
	},
	"DeleteResponsibility": func(t *testing.T, f respFixture, a respRows) {
		notFound(t, f.rs.DeleteResponsibility(context.Background(), f.b.ID, a.resp.ID), "DeleteResponsibility")
	},
	"OpenRun": func(t *testing.T, f respFixture, a respRows) {
		ctx := context.Background()
		err := f.rs.OpenRun(ctx, &responsibilities.Run{ID: uuid.New(), TenantID: f.b.ID, ResponsibilityID: a.resp.ID, Reason: responsibilities.ByOperator})
		notFound(t, err, "OpenRun of another tenant's responsibility")
		mine := newResp(f.b.ID, f.agentB.ID)
		require.NoError(t, f.rs.CreateResponsibility(ctx, mine))
		err = f.rs.OpenRun(ctx, &responsibilities.Run{ID: uuid.New(), TenantID: f.b.ID, ResponsibilityID: mine.ID, TaskID: a.run.TaskID,
			Reason: responsibilities.ByOperator})
		require.Error(t, err, "a run on another tenant's task")
	},
	"CloseRun": func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.CloseRun(context.Background(), f.b.ID, a.run.ID, nil)
		notFound(t, err, "CloseRun")
	},
	"OpenRunOf": func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.OpenRunOf(context.Background(), f.b.ID, a.resp.ID)
		notFound(t, err, "OpenRunOf")
	},
	"RunByTask": func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.RunByTask(context.Background(), f.b.ID, a.run.TaskID)
		notFound(t, err, "RunByTask")
	},
	"Usage": func(t *testing.T, f respFixture, a respRows) {
		u, err := f.rs.Usage(context.Background(), f.b.ID, a.resp.ID, time.Now().Add(-48*time.Hour), time.Now().Add(48*time.Hour))
		require.NoError(t, err)
		require.Zero(t, u.Runs+u.Followups+u.PendingFollowups+u.CostNotCounted, "Usage counted tenant A's rows")
	},
	"Arm": func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.Arm(context.Background(), f.b.ID, a.resp.ID, func(responsibilities.Armer) (*responsibilities.Wakeup, error) {
			t.Error("Arm planned on another tenant's responsibility")
			return nil, nil
		})
		notFound(t, err, "Arm")
	},
	"LiveWakeup": func(t *testing.T, f respFixture, a respRows) {
		_, err := f.rs.LiveWakeup(context.Background(), f.b.ID, a.resp.ID)
		notFound(t, err, "LiveWakeup")
	},
}

// TestEveryResponsibilityStoreMethodIsTenantIsolated walks the store's
// interface by reflection, so a method added without a case fails.
func TestEveryResponsibilityStoreMethodIsTenantIsolated(t *testing.T) {
	t.Parallel()
	f := respSetup(t)
	st := reflect.TypeFor[responsibilities.Store]()
	var methods []string
	for i := range st.NumMethod() {
		methods = append(methods, st.Method(i).Name)
	}
	for name := range respIsolation {
		require.True(t, slices.Contains(methods, name), "case %s names no method of responsibilities.Store; remove it", name)
	}
	for _, m := range methods {
		t.Run(m, func(t *testing.T) {
			check, ok := respIsolation[m]
			require.True(t, ok, "responsibilities.Store.%s has no two-tenant case: add one", m)
			a := seedResp(t, f)
			check(t, f, a)
			respIntact(t, f, a, m)
		})
	}
}

// TestOneLiveWakeupPerResponsibilityUnderConcurrency: 50 concurrent arms,
// even with a plan that does not look at the live wake-up, leave exactly
// one pending (the unique index), and an operator change cancels it and
// bumps the epoch.
func TestOneLiveWakeupPerResponsibilityUnderConcurrency(t *testing.T) {
	t.Parallel()
	f := respSetup(t)
	ctx := context.Background()
	r := newResp(f.a.ID, f.agentA.ID)
	require.NoError(t, f.rs.CreateResponsibility(ctx, r))
	require.EqualValues(t, 1, r.Epoch)
	run := &responsibilities.Run{ID: uuid.New(), TenantID: f.a.ID, ResponsibilityID: r.ID, Reason: responsibilities.BySchedule}
	require.NoError(t, f.rs.OpenRun(ctx, run))
	require.True(t, fault.Is(f.rs.OpenRun(ctx, &responsibilities.Run{ID: uuid.New(), TenantID: f.a.ID, ResponsibilityID: r.ID,
		Reason: responsibilities.BySchedule}), fault.Conflict), "a second open run")
	blind := func(a responsibilities.Armer) (*responsibilities.Wakeup, error) {
		return &responsibilities.Wakeup{ID: uuid.New(), RunID: run.ID, Kind: responsibilities.Followup, Epoch: a.Responsibility.Epoch,
			DueAt: time.Now().Add(time.Hour), CreatedBy: "agent:ada"}, nil
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, conflicts := 0, 0
	for range 50 {
		wg.Go(func() {
			_, err := f.rs.Arm(ctx, f.a.ID, r.ID, blind)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case fault.Is(err, fault.Conflict):
				conflicts++
			default:
				t.Errorf("unexpected %v", err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, won)
	require.Equal(t, 49, conflicts)
	live, err := f.rs.LiveWakeup(ctx, f.a.ID, r.ID)
	require.NoError(t, err)

	u, err := f.rs.Usage(ctx, f.a.ID, r.ID, time.Now().Add(-time.Hour), time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, responsibilities.Usage{From: u.From, To: u.To, Runs: 1, Followups: 1, PendingFollowups: 1}, u)

	up, err := f.rs.UpdateResponsibility(ctx, f.a.ID, r.ID, func(r *responsibilities.Responsibility) error {
		r.Status = responsibilities.Paused
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 2, up.Epoch, "an operator change bumps the epoch")
	_, err = f.rs.LiveWakeup(ctx, f.a.ID, r.ID)
	notFound(t, err, "the pending wake-up after an operator change")
	_ = live

	cost := int64(250)
	closed, err := f.rs.CloseRun(ctx, f.a.ID, run.ID, &cost)
	require.NoError(t, err)
	require.False(t, closed.CostNotCounted())
	_, err = f.rs.CloseRun(ctx, f.a.ID, run.ID, nil)
	require.True(t, fault.Is(err, fault.Conflict), "closing twice")
	u, err = f.rs.Usage(ctx, f.a.ID, r.ID, time.Now().Add(-time.Hour), time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 250, u.SpendCents)
	require.Zero(t, u.PendingFollowups, "a cancelled follow-up is not counted")
}
