package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
)

// seedQuestion gives tenant A a responsibility whose open run asked a
// question that expired (no run told of it yet, a.wakeup) and then
// another, still pending.
func seedQuestion(t *testing.T, f respFixture) (respRows, responsibilities.Wakeup) {
	t.Helper()
	ctx := context.Background()
	a := seedResp(t, f)
	settled, err := f.rs.Settle(ctx, f.a.ID, a.wakeup.ID, responsibilities.Cancelled)
	require.NoError(t, err)
	require.True(t, settled)
	ask := func() responsibilities.Wakeup {
		q, err := f.rs.Arm(ctx, f.a.ID, a.resp.ID, func(ar responsibilities.Armer) (*responsibilities.Wakeup, error) {
			return &responsibilities.Wakeup{ID: uuid.New(), RunID: a.run.ID, Kind: responsibilities.Question, Epoch: ar.Responsibility.Epoch,
				DueAt: time.Now().Add(time.Hour), Question: "ship?", Options: []string{"yes", "no"}, Flags: []string{"hidden_text"}, CreatedBy: "agent:x"}, nil
		})
		require.NoError(t, err)
		return q
	}
	a.wakeup = ask()
	settled, err = f.rs.Settle(ctx, f.a.ID, a.wakeup.ID, responsibilities.Expired)
	require.NoError(t, err)
	require.True(t, settled)
	return a, ask()
}

var questionIsolation = map[string]func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup){
	"OpenQuestions": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		for _, resp := range []uuid.UUID{uuid.Nil, a.resp.ID} {
			ws, err := f.rs.OpenQuestions(context.Background(), f.b.ID, resp, nil, 100)
			require.NoError(t, err)
			require.Empty(t, ws, "OpenQuestions listed tenant A's question")
		}
	},
	"Wakeup": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		_, err := f.rs.Wakeup(context.Background(), f.b.ID, q.ID)
		notFound(t, err, "Wakeup")
	},
	"AnswerQuestion": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		_, err := f.rs.AnswerQuestion(context.Background(), f.b.ID, q.ID, "yes", []string{}, "key:b", time.Now())
		notFound(t, err, "AnswerQuestion")
	},
	"Settle": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		ok, err := f.rs.Settle(context.Background(), f.b.ID, q.ID, responsibilities.Expired)
		require.NoError(t, err)
		require.False(t, ok, "Settle moved tenant A's question")
	},
	"Unsettle": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		require.NoError(t, f.rs.Unsettle(context.Background(), f.b.ID, a.wakeup.ID, responsibilities.Expired))
	},
	"Unreported": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		ws, err := f.rs.Unreported(context.Background(), f.b.ID, a.resp.ID)
		require.NoError(t, err)
		require.Empty(t, ws, "Unreported listed tenant A's question")
	},
	"MarkReported": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		require.NoError(t, f.rs.MarkReported(context.Background(), f.b.ID, []uuid.UUID{a.wakeup.ID, q.ID}))
	},
	"FireDueTicks": func(t *testing.T, f respFixture, a respRows, q responsibilities.Wakeup) {
		ctx := context.Background()
		_, err := f.db.Pool.Exec(ctx, `UPDATE responsibilities SET next_tick_at = now() - interval '1 second' WHERE tenant_id = $1 AND id = $2`,
			f.a.ID, a.resp.ID)
		require.NoError(t, err)
		// A planner that puts tenant A's run in tenant B is refused, and
		// nothing is written.
		_, _, err = f.rs.FireDueTicks(ctx, time.Now(), 10, func(due []responsibilities.DueTick) ([]responsibilities.TickOutcome, error) {
			out := make([]responsibilities.TickOutcome, len(due))
			for i, d := range due {
				require.Equal(t, f.a.ID, d.Responsibility.TenantID)
				out[i].Plan = &responsibilities.RunPlan{Run: responsibilities.Run{ID: uuid.New(), TenantID: f.b.ID, ResponsibilityID: d.Responsibility.ID}}
			}
			return out, nil
		})
		require.True(t, fault.Is(err, fault.Internal), "%v", err)
		// A skip naming tenant B is written to tenant A's row.
		claimed, _, err := f.rs.FireDueTicks(ctx, time.Now(), 10, func(due []responsibilities.DueTick) ([]responsibilities.TickOutcome, error) {
			out := make([]responsibilities.TickOutcome, len(due))
			for i := range due {
				out[i].Skip = &responsibilities.Skip{ID: uuid.New(), TenantID: f.b.ID, ResponsibilityID: uuid.New(), Reason: responsibilities.BySchedule,
					Cause: responsibilities.OverRunLimit, Detail: "full", At: time.Now()}
			}
			return out, nil
		})
		require.NoError(t, err)
		require.Equal(t, 1, claimed)
		var inB int
		require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM responsibility_skips WHERE tenant_id = $1`, f.b.ID).Scan(&inB))
		require.Zero(t, inB, "nothing was written in tenant B")
		ks, err := f.rs.Skips(ctx, f.a.ID, a.resp.ID, nil, 10)
		require.NoError(t, err)
		require.Len(t, ks, 1)
	},
}

// TestEveryQuestionStoreMethodIsTenantIsolated walks the question and
// schedule stores' interfaces by reflection: tenant B reaches none of
// tenant A's questions, and leaves them as they were.
func TestEveryQuestionStoreMethodIsTenantIsolated(t *testing.T) {
	t.Parallel()
	f := respSetup(t)
	var methods []string
	for _, it := range []reflect.Type{reflect.TypeFor[responsibilities.QuestionStore](), reflect.TypeFor[responsibilities.ScheduleStore]()} {
		for i := range it.NumMethod() {
			methods = append(methods, it.Method(i).Name)
		}
	}
	for name := range questionIsolation {
		require.True(t, slices.Contains(methods, name), "case %s names no method; remove it", name)
	}
	for _, m := range methods {
		t.Run(m, func(t *testing.T) {
			check, ok := questionIsolation[m]
			require.True(t, ok, "%s has no two-tenant case: add one", m)
			a, q := seedQuestion(t, f)
			check(t, f, a, q)
			ctx := context.Background()
			got, err := f.rs.Wakeup(ctx, f.a.ID, q.ID)
			require.NoError(t, err)
			require.Equal(t, responsibilities.Pending, got.State, "%s settled tenant A's question", m)
			require.Equal(t, []string{"hidden_text"}, got.Flags)
			un, err := f.rs.Unreported(ctx, f.a.ID, a.resp.ID)
			require.NoError(t, err)
			require.Len(t, un, 1, "%s changed what tenant A's next run is told", m)
			open, err := f.rs.OpenQuestions(ctx, f.a.ID, a.resp.ID, nil, 10)
			require.NoError(t, err)
			require.Len(t, open, 1)
		})
	}
}

// TestAQuestionPastItsExpiryTakesNoAnswer: the store refuses an answer
// once due_at passed, even before the expiry job settled it.
func TestAQuestionPastItsExpiryTakesNoAnswer(t *testing.T) {
	t.Parallel()
	f := respSetup(t)
	_, q := seedQuestion(t, f)
	_, err := f.rs.AnswerQuestion(context.Background(), f.a.ID, q.ID, "late", []string{}, "key:op", q.DueAt.Add(time.Second))
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	require.Contains(t, fault.Message(err), "expired")
}
