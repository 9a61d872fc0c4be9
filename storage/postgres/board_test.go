package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/storage/postgres"
)

type boardFixture struct {
	twoTenants
	db *postgres.DB
	bs *postgres.BoardStore
}

func boardSetup(t *testing.T) boardFixture {
	t.Helper()
	s := setup(t)
	return boardFixture{twoTenants: s, db: s.db, bs: postgres.NewBoardStore(s.db)}
}

func newTask(tenant, assignee uuid.UUID, title string) *board.Task {
	return &board.Task{ID: uuid.New(), TenantID: tenant, Kind: board.KindTask, Title: title, Status: board.Open, AssigneeID: assignee,
		CreatorKind: board.ByOperator, CreatedBy: "operator:k", Origin: board.Direct, Tags: []string{"x"}}
}

func notFound(t *testing.T, err error, what string) {
	t.Helper()
	require.True(t, fault.Is(err, fault.NotFound), "%s: tenant B must get not-found for tenant A's row, got %v", what, err)
}

// TestDueRoutinesAndRemindersFireOnceAcrossWorkers: two concurrent firers
// (two workers) write each run exactly once.
func TestDueRoutinesAndRemindersFireOnceAcrossWorkers(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Minute)
	for i := range 30 {
		require.NoError(t, f.bs.CreateReminder(ctx, &board.Reminder{ID: uuid.New(), TenantID: f.a.ID, AgentID: f.agentA.ID,
			Text: "r", DueAt: past.Add(time.Duration(i) * time.Millisecond), CreatorKind: board.ByOperator, CreatedBy: "o"}))
	}
	r := &board.Routine{ID: uuid.New(), TenantID: f.b.ID, Name: "n", Schedule: "@hourly", AgentID: f.agentB.ID, Tags: []string{},
		NextRunAt: &past, CreatorKind: board.ByOperator, CreatedBy: "o"}
	require.NoError(t, f.bs.CreateRoutine(ctx, r))
	svc := board.NewService(board.Deps{Store: f.bs})
	done := make(chan int, 2)
	for range 2 {
		go func() {
			n := 0
			for range 10 {
				runs, err := svc.FireDue(context.Background(), 7)
				if err != nil {
					t.Error(err)
				}
				n += len(runs)
			}
			done <- n
		}()
	}
	require.Equal(t, 31, <-done+<-done, "30 reminders and one routine run, each once")
	var wakeups int
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM wakeups`).Scan(&wakeups))
	require.Equal(t, 31, wakeups)
	got, err := f.bs.Routine(ctx, f.b.ID, r.ID)
	require.NoError(t, err)
	require.True(t, got.NextRunAt.After(time.Now()), "the routine's next run moved ahead")
}
