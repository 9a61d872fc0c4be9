package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
)

// acmeRows are tenant A's board records, fresh for each case: a task
// assigned to A's employee with an activity entry and a wake-up, a routine,
// a pending reminder and an employee spawned for the task.
type acmeRows struct {
	task     *board.Task
	routine  *board.Routine
	reminder *board.Reminder
	spawned  uuid.UUID
}

func seedAcme(t *testing.T, f boardFixture) acmeRows {
	t.Helper()
	ctx := context.Background()
	tk := newTask(f.a.ID, f.agentA.ID, "acme's")
	w := rounds.New(f.a.ID, f.agentA.ID, tk.ID, rounds.Assigned)
	fx := board.Effects{Wakeups: []rounds.Wakeup{w},
		Activity: []board.Activity{{ID: uuid.New(), TenantID: f.a.ID, TaskID: tk.ID, Kind: board.Created, Author: "operator:k"}}}
	require.NoError(t, f.bs.CreateTask(ctx, tk, fx, 0))
	next := time.Now().Add(time.Hour)
	r := &board.Routine{ID: uuid.New(), TenantID: f.a.ID, Name: "daily-" + tk.ID.String()[:8], Schedule: "@daily", AgentID: f.agentA.ID,
		Tags: []string{}, NextRunAt: &next, CreatorKind: board.ByOperator, CreatedBy: "operator:k"}
	require.NoError(t, f.bs.CreateRoutine(ctx, r))
	rem := &board.Reminder{ID: uuid.New(), TenantID: f.a.ID, AgentID: f.agentA.ID, Text: "ping", DueAt: next,
		CreatorKind: board.ByOperator, CreatedBy: "operator:k"}
	require.NoError(t, f.bs.CreateReminder(ctx, rem))
	eph, err := f.svc.CreateAgent(ctx, f.a.ID, identity.NewAgent{Name: "eph-" + tk.ID.String()[:8]})
	require.NoError(t, err)
	require.NoError(t, f.bs.RecordSpawn(ctx, f.a.ID, eph.ID, tk.ID, "operator:k"))
	return acmeRows{task: tk, routine: r, reminder: rem, spawned: eph.ID}
}

// intact checks that tenant A's records are as seeded.
func intact(t *testing.T, f boardFixture, a acmeRows, method string) {
	t.Helper()
	ctx := context.Background()
	tk, err := f.bs.Task(ctx, f.a.ID, a.task.ID)
	require.NoError(t, err, method)
	require.Equal(t, a.task.Title, tk.Title, "%s changed tenant A's task", method)
	require.Equal(t, a.task.AssigneeID, tk.AssigneeID, "%s changed tenant A's task", method)
	acts, err := f.bs.ListActivity(ctx, f.a.ID, a.task.ID, nil, 10)
	require.NoError(t, err)
	require.Len(t, acts, 1, "%s touched tenant A's activity", method)
	r, err := f.bs.Routine(ctx, f.a.ID, a.routine.ID)
	require.NoError(t, err, "%s deleted tenant A's routine", method)
	require.Equal(t, a.routine.Name, r.Name, "%s changed tenant A's routine", method)
	require.Equal(t, a.routine.Paused, r.Paused, "%s changed tenant A's routine", method)
	require.Nil(t, r.LastRunAt, "%s ran tenant A's routine", method)
	rem, err := f.bs.Reminder(ctx, f.a.ID, a.reminder.ID)
	require.NoError(t, err)
	require.Nil(t, rem.CancelledAt, "%s cancelled tenant A's reminder", method)
	spawned, err := f.bs.SpawnedFor(ctx, f.a.ID, a.task.ID)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a.spawned}, spawned, "%s retired tenant A's spawned employee", method)
}

// boardIsolation has one case per method of board.Store: called as tenant
// B with tenant A's ids, the method must find nothing (fault.NotFound or an
// empty answer) or refuse, and leave tenant A's records intact.
var boardIsolation = map[string]func(t *testing.T, f boardFixture, a acmeRows){
	"CreateTask": func(t *testing.T, f boardFixture, a acmeRows) {
		ctx := context.Background()
		sub := newTask(f.b.ID, uuid.Nil, "globex's sub")
		sub.ParentID = a.task.ID
		notFound(t, f.bs.CreateTask(ctx, sub, board.Effects{}, board.SubtaskCap), "CreateTask under another tenant's parent")
		bad := newTask(f.b.ID, f.agentA.ID, "assigned across tenants")
		require.Error(t, f.bs.CreateTask(ctx, bad, board.Effects{}, 0), "assigning another tenant's employee")
		bad = newTask(f.b.ID, f.agentB.ID, "waking across tenants")
		w := rounds.New(f.b.ID, f.agentA.ID, bad.ID, rounds.Assigned)
		require.Error(t, f.bs.CreateTask(ctx, bad, board.Effects{Wakeups: []rounds.Wakeup{w}}, 0), "a wake-up for another tenant's employee")
	},
	"Task": func(t *testing.T, f boardFixture, a acmeRows) {
		_, err := f.bs.Task(context.Background(), f.b.ID, a.task.ID)
		notFound(t, err, "Task")
	},
	"ListTasks": func(t *testing.T, f boardFixture, a acmeRows) {
		for _, filter := range []board.TaskFilter{{Limit: 10}, {Assignee: f.agentA.ID, Limit: 10}, {Parent: a.task.ID, Limit: 10}, {Tag: "x", Limit: 10}} {
			ts, err := f.bs.ListTasks(context.Background(), f.b.ID, filter)
			require.NoError(t, err)
			for _, tk := range ts {
				require.Equal(t, f.b.ID, tk.TenantID, "ListTasks %+v returned tenant A's task", filter)
			}
		}
	},
	"UpdateTask": func(t *testing.T, f boardFixture, a acmeRows) {
		_, err := f.bs.UpdateTask(context.Background(), f.b.ID, a.task.ID, func(tk *board.Task) (board.Effects, error) {
			tk.Title = "taken"
			return board.Effects{}, nil
		})
		notFound(t, err, "UpdateTask")
	},
	"Within": func(t *testing.T, f boardFixture, a acmeRows) {
		in, err := f.bs.Within(context.Background(), f.b.ID, a.task.ID, a.task.ID)
		require.NoError(t, err)
		require.False(t, in, "Within")
	},
	"AddActivity": func(t *testing.T, f boardFixture, a acmeRows) {
		err := f.bs.AddActivity(context.Background(), &board.Activity{ID: uuid.New(), TenantID: f.b.ID, TaskID: a.task.ID,
			Kind: board.Comment, Author: "x", Text: "hi"})
		require.Error(t, err, "AddActivity on another tenant's task")
	},
	"ListActivity": func(t *testing.T, f boardFixture, a acmeRows) {
		acts, err := f.bs.ListActivity(context.Background(), f.b.ID, a.task.ID, nil, 10)
		require.NoError(t, err)
		require.Empty(t, acts, "ListActivity")
	},
	"CreateRoutine": func(t *testing.T, f boardFixture, a acmeRows) {
		err := f.bs.CreateRoutine(context.Background(), &board.Routine{ID: uuid.New(), TenantID: f.b.ID, Name: "x", Schedule: "@daily",
			AgentID: f.agentA.ID, CreatorKind: board.ByOperator, CreatedBy: "o", Tags: []string{}})
		require.Error(t, err, "a routine running as another tenant's employee")
	},
	"Routine": func(t *testing.T, f boardFixture, a acmeRows) {
		_, err := f.bs.Routine(context.Background(), f.b.ID, a.routine.ID)
		notFound(t, err, "Routine")
	},
	"RoutinesNamed": func(t *testing.T, f boardFixture, a acmeRows) {
		rs, err := f.bs.RoutinesNamed(context.Background(), f.b.ID, a.routine.Name)
		require.NoError(t, err)
		require.Empty(t, rs, "RoutinesNamed")
	},
	"ListRoutines": func(t *testing.T, f boardFixture, a acmeRows) {
		rs, err := f.bs.ListRoutines(context.Background(), f.b.ID, nil, 100)
		require.NoError(t, err)
		for _, r := range rs {
			require.Equal(t, f.b.ID, r.TenantID, "ListRoutines returned tenant A's routine")
		}
	},
	"UpdateRoutine": func(t *testing.T, f boardFixture, a acmeRows) {
		_, err := f.bs.UpdateRoutine(context.Background(), f.b.ID, a.routine.ID, func(r *board.Routine, _ string) error {
			r.Paused = true
			return nil
		})
		notFound(t, err, "UpdateRoutine")
	},
	"DeleteRoutine": func(t *testing.T, f boardFixture, a acmeRows) {
		notFound(t, f.bs.DeleteRoutine(context.Background(), f.b.ID, a.routine.ID), "DeleteRoutine")
	},
	"RunRoutine": func(t *testing.T, f boardFixture, a acmeRows) {
		_, err := f.bs.RunRoutine(context.Background(), f.b.ID, a.routine.ID, func(board.Routine, string) (board.Run, error) {
			t.Error("RunRoutine planned a run of another tenant's routine")
			return board.Run{}, nil
		})
		notFound(t, err, "RunRoutine")
	},
	"FireDueRoutines": func(t *testing.T, f boardFixture, a acmeRows) {
		// It works across tenants by design; each run must land in the
		// routine's own tenant. B's due routine fires; A's is not due.
		past := time.Now().Add(-time.Minute)
		r := &board.Routine{ID: uuid.New(), TenantID: f.b.ID, Name: "b", Schedule: "@hourly", AgentID: f.agentB.ID, Tags: []string{},
			NextRunAt: &past, CreatorKind: board.ByOperator, CreatedBy: "o"}
		require.NoError(t, f.bs.CreateRoutine(context.Background(), r))
		svc := board.NewService(board.Deps{Store: f.bs})
		runs, err := svc.FireDue(context.Background(), 100)
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, f.b.ID, runs[0].Task.TenantID)
		_, err = f.bs.Task(context.Background(), f.a.ID, runs[0].Task.ID)
		notFound(t, err, "a run of B's routine seen from A")
		require.NoError(t, f.bs.DeleteRoutine(context.Background(), f.b.ID, r.ID))
	},
	"CreateReminder": func(t *testing.T, f boardFixture, a acmeRows) {
		err := f.bs.CreateReminder(context.Background(), &board.Reminder{ID: uuid.New(), TenantID: f.b.ID, AgentID: f.agentA.ID,
			Text: "x", DueAt: time.Now().Add(time.Hour), CreatorKind: board.ByOperator, CreatedBy: "o"})
		require.Error(t, err, "a reminder for another tenant's employee")
		err = f.bs.CreateReminder(context.Background(), &board.Reminder{ID: uuid.New(), TenantID: f.b.ID, AgentID: f.agentB.ID,
			TaskID: a.task.ID, Text: "x", DueAt: time.Now().Add(time.Hour), CreatorKind: board.ByOperator, CreatedBy: "o"})
		require.Error(t, err, "a reminder on another tenant's task")
	},
	"Reminder": func(t *testing.T, f boardFixture, a acmeRows) {
		_, err := f.bs.Reminder(context.Background(), f.b.ID, a.reminder.ID)
		notFound(t, err, "Reminder")
	},
	"ListReminders": func(t *testing.T, f boardFixture, a acmeRows) {
		for _, pending := range []bool{false, true} {
			rs, err := f.bs.ListReminders(context.Background(), f.b.ID, pending, nil, 100)
			require.NoError(t, err)
			for _, r := range rs {
				require.Equal(t, f.b.ID, r.TenantID, "ListReminders returned tenant A's reminder")
			}
		}
	},
	"CancelReminder": func(t *testing.T, f boardFixture, a acmeRows) {
		_, err := f.bs.CancelReminder(context.Background(), f.b.ID, a.reminder.ID)
		notFound(t, err, "CancelReminder")
	},
	"FireDueReminders": func(t *testing.T, f boardFixture, a acmeRows) {
		rem := &board.Reminder{ID: uuid.New(), TenantID: f.b.ID, AgentID: f.agentB.ID, Text: "b", DueAt: time.Now().Add(-time.Second),
			CreatorKind: board.ByOperator, CreatedBy: "o"}
		require.NoError(t, f.bs.CreateReminder(context.Background(), rem))
		svc := board.NewService(board.Deps{Store: f.bs})
		runs, err := svc.FireDue(context.Background(), 100)
		require.NoError(t, err)
		require.Len(t, runs, 1, "only B's due reminder fires")
		require.Equal(t, f.b.ID, runs[0].Wakeup.TenantID)
		require.Equal(t, f.b.ID, runs[0].Task.TenantID)
	},
	"RecordSpawn": func(t *testing.T, f boardFixture, a acmeRows) {
		require.Error(t, f.bs.RecordSpawn(context.Background(), f.b.ID, a.spawned, a.task.ID, "x"), "RecordSpawn of A's records as B")
		require.Error(t, f.bs.RecordSpawn(context.Background(), f.b.ID, f.agentB.ID, a.task.ID, "x"), "RecordSpawn for A's task")
	},
	"SpawnedFor": func(t *testing.T, f boardFixture, a acmeRows) {
		ids, err := f.bs.SpawnedFor(context.Background(), f.b.ID, a.task.ID)
		require.NoError(t, err)
		require.Empty(t, ids, "SpawnedFor")
	},
	"Retire": func(t *testing.T, f boardFixture, a acmeRows) {
		require.NoError(t, f.bs.Retire(context.Background(), f.b.ID, a.spawned))
	},
}

// TestEveryBoardStoreMethodIsTenantIsolated walks board.Store's method set
// by reflection, so a method added to the interface without a case here
// fails the test.
func TestEveryBoardStoreMethodIsTenantIsolated(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	st := reflect.TypeFor[board.Store]()
	var methods []string
	for i := range st.NumMethod() {
		methods = append(methods, st.Method(i).Name)
	}
	for name := range boardIsolation {
		require.True(t, slices.Contains(methods, name), "case %s names no method of board.Store; remove it", name)
	}
	for _, m := range methods {
		t.Run(m, func(t *testing.T) {
			check, ok := boardIsolation[m]
			require.True(t, ok, "board.Store.%s has no two-tenant case in boardIsolation: add one", m)
			a := seedAcme(t, f)
			check(t, f, a)
			intact(t, f, a, m)
		})
	}
}
