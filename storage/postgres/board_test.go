package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

type boardFixture struct {
	twoTenants
	db *postgres.DB
	bs *postgres.BoardStore
}

func boardSetup(t *testing.T) boardFixture {
	t.Helper()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	svc := identity.NewService(store, changes.Discard{}, discardLogger())
	ctx := context.Background()
	f := boardFixture{db: db, bs: postgres.NewBoardStore(db, nil)}
	f.svc, f.store = svc, store
	var err error
	f.a, err = svc.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	f.b, err = svc.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	f.agentA, err = svc.CreateAgent(ctx, f.a.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	f.agentB, err = svc.CreateAgent(ctx, f.b.ID, identity.NewAgent{Name: "bob"})
	require.NoError(t, err)
	return f
}

func newTask(tenant, assignee uuid.UUID, title string) *board.Task {
	return &board.Task{ID: uuid.New(), TenantID: tenant, Kind: board.KindTask, Title: title, Status: board.Open, AssigneeID: assignee,
		CreatorKind: board.ByOperator, CreatedBy: "operator:k", Origin: board.Direct, Tags: []string{"x"}}
}

func notFound(t *testing.T, err error, what string) {
	t.Helper()
	require.True(t, fault.Is(err, fault.NotFound), "%s: tenant B must get not-found for tenant A's row, got %v", what, err)
}

// TestBoardTasksAreTenantIsolated: every task and activity method of the
// board store, called for tenant B, never reaches tenant A's rows.
func TestBoardTasksAreTenantIsolated(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	ctx := context.Background()
	tk := newTask(f.a.ID, f.agentA.ID, "acme's")
	w := rounds.New(f.a.ID, f.agentA.ID, tk.ID, rounds.Assigned, rounds.Data{Label: "l", Author: "a", Text: "t"})
	require.NoError(t, f.bs.CreateTask(ctx, tk, board.Effects{Wakeups: []rounds.Wakeup{w}}, 0))

	_, err := f.bs.Task(ctx, f.b.ID, tk.ID)
	notFound(t, err, "Task")
	_, err = f.bs.UpdateTask(ctx, f.b.ID, tk.ID, func(*board.Task) (board.Effects, error) { return board.Effects{}, nil })
	notFound(t, err, "UpdateTask")
	list, err := f.bs.ListTasks(ctx, f.b.ID, board.TaskFilter{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, list, "ListTasks")
	in, err := f.bs.Within(ctx, f.b.ID, tk.ID, tk.ID)
	require.NoError(t, err)
	require.False(t, in, "Within")
	sub := newTask(f.b.ID, uuid.Nil, "globex's sub")
	sub.ParentID = tk.ID
	notFound(t, f.bs.CreateTask(ctx, sub, board.Effects{}, board.SubtaskCap), "CreateTask under another tenant's parent")
	err = f.bs.AddActivity(ctx, &board.Activity{ID: uuid.New(), TenantID: f.b.ID, TaskID: tk.ID, Kind: board.Comment, Author: "x", Text: "hi"})
	require.Error(t, err, "AddActivity on another tenant's task")
	acts, err := f.bs.ListActivity(ctx, f.b.ID, tk.ID, 10)
	require.NoError(t, err)
	require.Empty(t, acts, "ListActivity")

	// Tenant A sees its own.
	got, err := f.bs.Task(ctx, f.a.ID, tk.ID)
	require.NoError(t, err)
	require.Equal(t, "acme's", got.Title)
	require.NoError(t, f.bs.AddActivity(ctx, &board.Activity{ID: uuid.New(), TenantID: f.a.ID, TaskID: tk.ID, Kind: board.Comment, Author: "x", Text: "hi"}))
	acts, err = f.bs.ListActivity(ctx, f.a.ID, tk.ID, 10)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	// A wake-up cannot name another tenant's task or agent.
	bad := newTask(f.b.ID, f.agentB.ID, "globex's")
	err = f.bs.CreateTask(ctx, bad, board.Effects{Wakeups: []rounds.Wakeup{rounds.New(f.b.ID, f.agentA.ID, bad.ID, rounds.Assigned)}}, 0)
	require.Error(t, err, "a wake-up for another tenant's agent")
	bad.AssigneeID = f.agentA.ID
	require.Error(t, f.bs.CreateTask(ctx, bad, board.Effects{}, 0), "assigning another tenant's agent")
}

func TestBoardRoutinesRemindersAndSpawnsAreTenantIsolated(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	ctx := context.Background()
	next := time.Now().Add(time.Hour)
	r := &board.Routine{ID: uuid.New(), TenantID: f.a.ID, Name: "daily", Schedule: "@daily", AgentID: f.agentA.ID, Tags: []string{},
		NextRunAt: &next, CreatorKind: board.ByOperator, CreatedBy: "operator:k"}
	require.NoError(t, f.bs.CreateRoutine(ctx, r))
	_, err := f.bs.Routine(ctx, f.b.ID, r.ID)
	notFound(t, err, "Routine")
	named, err := f.bs.RoutinesNamed(ctx, f.b.ID, "daily")
	require.NoError(t, err)
	require.Empty(t, named, "RoutinesNamed")
	rs, err := f.bs.ListRoutines(ctx, f.b.ID, nil, 10)
	require.NoError(t, err)
	require.Empty(t, rs, "ListRoutines")
	_, err = f.bs.UpdateRoutine(ctx, f.b.ID, r.ID, func(*board.Routine, string) error { return nil })
	notFound(t, err, "UpdateRoutine")
	_, err = f.bs.RunRoutine(ctx, f.b.ID, r.ID, func(board.Routine, string) (board.Run, error) { return board.Run{}, nil })
	notFound(t, err, "RunRoutine")
	notFound(t, f.bs.DeleteRoutine(ctx, f.b.ID, r.ID), "DeleteRoutine")
	err = f.bs.CreateRoutine(ctx, &board.Routine{ID: uuid.New(), TenantID: f.b.ID, Name: "x", Schedule: "@daily",
		AgentID: f.agentA.ID, CreatorKind: board.ByOperator, CreatedBy: "o", Tags: []string{}})
	require.Error(t, err, "a routine running as another tenant's agent")

	rem := &board.Reminder{ID: uuid.New(), TenantID: f.a.ID, AgentID: f.agentA.ID, Text: "ping", DueAt: next,
		CreatorKind: board.ByOperator, CreatedBy: "operator:k"}
	require.NoError(t, f.bs.CreateReminder(ctx, rem))
	_, err = f.bs.Reminder(ctx, f.b.ID, rem.ID)
	notFound(t, err, "Reminder")
	rems, err := f.bs.ListReminders(ctx, f.b.ID, false, nil, 10)
	require.NoError(t, err)
	require.Empty(t, rems, "ListReminders")
	_, err = f.bs.CancelReminder(ctx, f.b.ID, rem.ID)
	notFound(t, err, "CancelReminder")
	_, err = f.bs.CancelReminder(ctx, f.a.ID, rem.ID)
	require.NoError(t, err)

	tk := newTask(f.a.ID, f.agentA.ID, "acme's")
	require.NoError(t, f.bs.CreateTask(ctx, tk, board.Effects{}, 0))
	require.Error(t, f.bs.RecordSpawn(ctx, f.b.ID, f.agentA.ID, tk.ID, "x"), "RecordSpawn across tenants")
	require.NoError(t, f.bs.RecordSpawn(ctx, f.a.ID, f.agentA.ID, tk.ID, "x"))
	ids, err := f.bs.SpawnedFor(ctx, f.b.ID, tk.ID)
	require.NoError(t, err)
	require.Empty(t, ids, "SpawnedFor")
	require.NoError(t, f.bs.Retire(ctx, f.b.ID, f.agentA.ID))
	ids, err = f.bs.SpawnedFor(ctx, f.a.ID, tk.ID)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{f.agentA.ID}, ids, "Retire for tenant B leaves tenant A's row")
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
