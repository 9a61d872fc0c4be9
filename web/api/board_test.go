package api_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/api"
)

// boardFixture is the admin API with the board, grants and runtime
// resources on real Postgres: tenants acme (employee ada, whose
// scoped_tools name secret_*) and globex, each with an operator key. Grant
// changes are recorded as the live streams would hear them.
type boardFixture struct {
	*fixture
	grants *grants.Service
	heard  *heard
	ada    identity.Agent
}

type heard struct {
	mu     sync.Mutex
	events []changes.Event
}

func (h *heard) Publish(_ context.Context, e changes.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
	return nil
}

func (h *heard) grantChangesFor(agent uuid.UUID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.events {
		if e.Kind == changes.GrantChanged && e.AgentID == agent {
			n++
		}
	}
	return n
}

func newBoardFixture(t *testing.T) *boardFixture {
	t.Helper()
	s := newStack(t)
	h := &heard{}
	gs := grants.NewService(postgres.NewGrantStore(s.db), s.store, h, tools.Match, s.log)
	bs := board.NewService(board.Deps{Store: postgres.NewBoardStore(s.db), Relations: agents.NewDelegation(s.store),
		Directory: s.store, Staff: s.ids, Grants: gs, Logger: s.log})
	rs := rounds.NewService(rounds.Config{Store: postgres.NewRoundsStore(s.db), Logger: s.log})
	f := s.serve(api.Deps{}, api.NewGrants(gs), api.NewBoard(bs), api.NewRuntime(rs)).withGlobex()
	ada := f.agent(f.tenant, identity.NewAgent{Name: "ada",
		Settings: identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: []string{"secret_*"}}}})
	return &boardFixture{fixture: f, grants: gs, heard: h, ada: ada}
}

// wakeups counts the wake-ups written for agent on task.
func (f *boardFixture) wakeups(agent, task uuid.UUID) int {
	f.t.Helper()
	var n int
	require.NoError(f.t, f.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM wakeups WHERE tenant_id = $1 AND agent_id = $2 AND task_id = $3`, f.tenant.ID, agent, task).Scan(&n))
	return n
}

func TestOperatorManagesTasksAndGoalsThroughTheAPI(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	base := "/api/v1/tenants/acme"

	var goal board.Task
	code, body := f.do("POST", base+"/tasks", f.opKey, fmt.Sprintf(`{"kind":"goal","title":"Ship v2","acceptance_criteria":"p99 < 1s",
		"assignee":%q,"tags":["outcome:revenue"]}`, f.ada.ID), &goal)
	require.Equal(t, 201, code, body)
	require.Equal(t, board.KindGoal, goal.Kind)
	require.Equal(t, "p99 < 1s", goal.AcceptanceCriteria, "operators set acceptance criteria through the admin API")
	require.Equal(t, f.ada.ID, goal.AssigneeID)
	require.Equal(t, 1, f.wakeups(f.ada.ID, goal.ID), "assigning wakes the employee")

	var sub board.Task
	code, body = f.do("POST", base+"/tasks", f.opKey, fmt.Sprintf(`{"title":"Benchmarks","parent_task_id":%q}`, goal.ID), &sub)
	require.Equal(t, 201, code, body)
	require.Equal(t, goal.ID, sub.ParentID)

	var patched board.Task
	code, body = f.do("PATCH", base+"/tasks/"+goal.ID.String(), f.opKey,
		`{"title":"Ship v2.1","acceptance_criteria":"p99 < 500ms","assignee":null,"tags":["outcome:revenue","auto-research"]}`, &patched)
	require.Equal(t, 200, code, body)
	require.Equal(t, "Ship v2.1", patched.Title, "operators change a goal's title")
	require.Equal(t, "p99 < 500ms", patched.AcceptanceCriteria)
	require.Equal(t, uuid.Nil, patched.AssigneeID, "assignee null unassigns")
	require.Equal(t, []string{"outcome:revenue", "auto-research"}, patched.Tags, "operators place protected tags")

	var got board.Task
	code, body = f.do("GET", base+"/tasks/"+goal.ID.String(), f.opKey, "", &got)
	require.Equal(t, 200, code, body)
	require.Equal(t, patched.Title, got.Title)
	ghost := uuid.NewString()
	code, body = f.do("GET", base+"/tasks/"+ghost, f.opKey, "", nil)
	require.Equal(t, 404, code, body)
	require.Contains(t, body, "no task has id "+ghost)

	// Comments, and a page of activity.
	for i := range 3 {
		code, body = f.do("POST", base+"/tasks/"+sub.ID.String()+"/activity", f.opKey, fmt.Sprintf(`{"text":"note %d"}`, i), nil)
		require.Equal(t, 201, code, body)
	}
	var page api.ActivityList
	code, body = f.do("GET", base+"/tasks/"+sub.ID.String()+"/activity?limit=2", f.opKey, "", &page)
	require.Equal(t, 200, code, body)
	require.Len(t, page.Activity, 2)
	require.Equal(t, "note 2", page.Activity[0].Text, "newest first")
	require.NotEmpty(t, page.NextCursor)
	var rest api.ActivityList
	f.do("GET", base+"/tasks/"+sub.ID.String()+"/activity?limit=2&cursor="+page.NextCursor, f.opKey, "", &rest)
	require.Len(t, rest.Activity, 2, "note 0 and the created entry")
	require.Empty(t, rest.NextCursor)

	// Lists filter and page.
	var list api.TaskList
	code, body = f.do("GET", base+"/tasks?kind=goal", f.opKey, "", &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Tasks, 1)
	f.do("GET", base+"/tasks?parent_task_id="+goal.ID.String(), f.opKey, "", &list)
	require.Len(t, list.Tasks, 1)
	require.Equal(t, sub.ID, list.Tasks[0].ID)
	f.do("GET", base+"/tasks?limit=1", f.opKey, "", &list)
	require.Len(t, list.Tasks, 1)
	require.Equal(t, sub.ID, list.Tasks[0].ID, "newest first")
	f.do("GET", base+"/tasks?limit=1&cursor="+list.NextCursor, f.opKey, "", &list)
	require.Equal(t, goal.ID, list.Tasks[0].ID)

	// Block, unblock, complete.
	code, body = f.do("POST", base+"/tasks/"+sub.ID.String()+"/block", f.opKey, `{"reason":"waiting on hardware"}`, &got)
	require.Equal(t, 200, code, body)
	require.Equal(t, board.Blocked, got.Status)
	code, body = f.do("PATCH", base+"/tasks/"+sub.ID.String(), f.opKey, `{"status":"in_progress"}`, &got)
	require.Equal(t, 200, code, body)
	require.Equal(t, board.InProgress, got.Status)
	code, body = f.do("POST", base+"/tasks/"+sub.ID.String()+"/complete", f.opKey, `{"summary":"done"}`, &got)
	require.Equal(t, 200, code, body)
	require.Equal(t, board.Done, got.Status)
	code, body = f.do("POST", base+"/tasks/"+sub.ID.String()+"/complete", f.opKey, "", nil)
	require.Equal(t, 409, code, body)
	requireError(t, body, "conflict")
}

// TestTaskScopedGrantsEndAtEveryTerminalState: completing or cancelling a
// task ends the grants scoped to it, and each ending is announced for the
// employee, which is what makes its open streams hear list_changed.
func TestTaskScopedGrantsEndAtEveryTerminalState(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	base := "/api/v1/tenants/acme"
	for _, finish := range []struct{ name, method, path, body string }{
		{"done", "POST", "/complete", `{"summary":"ok"}`},
		{"cancelled", "PATCH", "", `{"status":"cancelled"}`},
	} {
		var tk board.Task
		code, body := f.do("POST", base+"/tasks", f.opKey, fmt.Sprintf(`{"title":"needs a secret","assignee":%q}`, f.ada.ID), &tk)
		require.Equal(t, 201, code, body)
		g, err := f.grants.Grant(context.Background(), f.tenant.ID, f.ada.ID, "secret_read", tk.ID, 0, "operator:test")
		require.NoError(t, err)
		lasting, err := f.grants.Grant(context.Background(), f.tenant.ID, f.ada.ID, "secret_write", uuid.Nil, 0, "operator:test")
		require.NoError(t, err)
		before := f.heard.grantChangesFor(f.ada.ID)

		code, body = f.do(finish.method, base+"/tasks/"+tk.ID.String()+finish.path, f.opKey, finish.body, nil)
		require.Equal(t, 200, code, body)
		var live api.GrantList
		f.do("GET", base+"/grants?live=true&agent="+f.ada.ID.String(), f.opKey, "", &live)
		ids := []uuid.UUID{}
		for _, l := range live.Grants {
			ids = append(ids, l.ID)
		}
		require.NotContains(t, ids, g.ID, "%s: the task-scoped grant ended", finish.name)
		require.Contains(t, ids, lasting.ID, "%s: a grant not scoped to the task stays", finish.name)
		require.Equal(t, before+1, f.heard.grantChangesFor(f.ada.ID), "%s: the change is announced (list_changed)", finish.name)
		_, err = f.grants.Revoke(context.Background(), f.tenant.ID, lasting.ID, "operator:test")
		require.NoError(t, err)
	}
}

func TestOperatorManagesRoutinesAndRemindersThroughTheAPI(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	base := "/api/v1/tenants/acme"

	var r board.Routine
	code, body := f.do("POST", base+"/routines", f.opKey, fmt.Sprintf(`{"name":"standup","schedule":"0 9 * * 1-5","agent":%q}`, f.ada.ID), &r)
	require.Equal(t, 201, code, body)
	require.NotNil(t, r.NextRunAt)
	id := r.ID.String()
	r = board.Routine{} // absent fields must not keep their old values
	code, body = f.do("PATCH", base+"/routines/"+id, f.opKey, `{"schedule":"@hourly","paused":true}`, &r)
	require.Equal(t, 200, code, body)
	require.Equal(t, "@hourly", r.Schedule)
	require.True(t, r.Paused)
	require.Nil(t, r.NextRunAt, "a paused routine has no next run")
	var run api.RoutineRun
	code, body = f.do("POST", base+"/routines/"+r.ID.String()+"/run", f.opKey, "", &run)
	require.Equal(t, 201, code, body)
	require.Equal(t, board.FromRoutine, run.Task.Origin)
	require.Equal(t, 1, f.wakeups(f.ada.ID, run.Task.ID), "a run is one round")
	var rl api.RoutineList
	code, body = f.do("GET", base+"/routines", f.opKey, "", &rl)
	require.Equal(t, 200, code, body)
	require.Len(t, rl.Routines, 1)
	code, body = f.do("DELETE", base+"/routines/"+r.ID.String(), f.opKey, "", nil)
	require.Equal(t, 204, code, body)
	code, _ = f.do("GET", base+"/routines/"+r.ID.String(), f.opKey, "", nil)
	require.Equal(t, 404, code)

	var rem board.Reminder
	due := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, body = f.do("POST", base+"/reminders", f.opKey, fmt.Sprintf(`{"agent":%q,"text":"check the build","due_at":%q}`, f.ada.ID, due), &rem)
	require.Equal(t, 201, code, body)
	var one board.Reminder
	code, body = f.do("GET", base+"/reminders/"+rem.ID.String(), f.opKey, "", &one)
	require.Equal(t, 200, code, body)
	require.Equal(t, rem.ID, one.ID)
	require.Equal(t, "check the build", one.Text)
	ghost := uuid.NewString()
	code, body = f.do("GET", base+"/reminders/"+ghost, f.opKey, "", nil)
	require.Equal(t, 404, code, body)
	require.Contains(t, body, "no reminder has id "+ghost)
	var rems api.ReminderList
	f.do("GET", base+"/reminders?pending=true", f.opKey, "", &rems)
	require.Len(t, rems.Reminders, 1)
	code, body = f.do("DELETE", base+"/reminders/"+rem.ID.String(), f.opKey, "", &rem)
	require.Equal(t, 200, code, body)
	require.NotNil(t, rem.CancelledAt)
	f.do("GET", base+"/reminders?pending=true", f.opKey, "", &rems)
	require.Empty(t, rems.Reminders)
	code, body = f.do("DELETE", base+"/reminders/"+rem.ID.String(), f.opKey, "", nil)
	require.Equal(t, 409, code, body)
}

// TestBoardAPIClientMistakesAreFourHundreds: bad input is a 4xx naming the
// problem, another tenant's records are 404, never a 500.
func TestBoardAPIClientMistakesAreFourHundreds(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	base := "/api/v1/tenants/acme"
	var tk board.Task
	code, body := f.do("POST", base+"/tasks", f.opKey, `{"title":"mine"}`, &tk)
	require.Equal(t, 201, code, body)
	task := base + "/tasks/" + tk.ID.String()
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", base + "/tasks", `{}`, 400, "invalid_argument"},
		{"POST", base + "/tasks", `{"title":"x","kind":"epic"}`, 400, "invalid_argument"},
		{"POST", base + "/tasks", `{"title":"x","colour":"red"}`, 400, "invalid_argument"},
		{"POST", base + "/tasks", `{"title":"x","tags":["a b"]}`, 400, "invalid_argument"},
		{"POST", base + "/tasks", `{"title":"x","parent_task_id":"` + uuid.NewString() + `"}`, 404, "not_found"},
		{"POST", base + "/tasks", `{"title":"x","assignee":"` + uuid.NewString() + `"}`, 404, "not_found"},
		{"POST", base + "/tasks", `{"title":"x","parent_task_id":"nope"}`, 400, "invalid_argument"},
		{"PATCH", task, `{}`, 400, "invalid_argument"},
		{"PATCH", task, `{"status":"done"}`, 400, "invalid_argument"},
		{"PATCH", task, `{"status":"sleeping"}`, 400, "invalid_argument"},
		{"POST", task + "/block", `{"reason":""}`, 400, "invalid_argument"},
		{"POST", task + "/activity", `{"text":""}`, 400, "invalid_argument"},
		{"GET", base + "/tasks?limit=0", "", 400, "invalid_argument"},
		{"GET", base + "/tasks?cursor=xyz", "", 400, "invalid_argument"},
		{"GET", base + "/tasks?status=sleeping", "", 400, "invalid_argument"},
		{"GET", base + "/tasks?assignee=nobody", "", 400, "invalid_argument"},
		{"GET", base + "/tasks/" + uuid.NewString(), "", 404, "not_found"},
		{"GET", base + "/tasks/nope", "", 404, "not_found"},
		{"GET", base + "/tasks/" + uuid.NewString() + "/activity", "", 404, "not_found"},
		{"POST", base + "/routines", `{"name":"x","schedule":"every day","agent":"` + f.ada.ID.String() + `"}`, 400, "invalid_argument"},
		{"POST", base + "/routines", `{"name":"x","schedule":"@daily"}`, 400, "invalid_argument"},
		{"POST", base + "/reminders", `{"agent":"` + f.ada.ID.String() + `","text":"x","due_at":"2001-01-01T00:00:00Z"}`, 400, "invalid_argument"},
		{"GET", base + "/reminders?pending=maybe", "", 400, "invalid_argument"},
	} {
		code, body := f.do(c.method, c.path, f.opKey, c.body, nil)
		require.Equal(t, c.status, code, "%s %s %s: %s", c.method, c.path, c.body, body)
		requireError(t, body, c.code)
	}

	// Globex's operator never reaches acme's task, whatever path it uses.
	code, _ = f.do("GET", "/api/v1/tenants/globex/tasks/"+tk.ID.String(), f.otherKey, "", nil)
	require.Equal(t, 404, code)
	code, _ = f.do("PATCH", "/api/v1/tenants/globex/tasks/"+tk.ID.String(), f.otherKey, `{"title":"mine now"}`, nil)
	require.Equal(t, 404, code)
	code, _ = f.do("GET", task, f.otherKey, "", nil)
	require.Equal(t, 401, code, "globex's key names another tenant")
	var list api.TaskList
	f.do("GET", "/api/v1/tenants/globex/tasks", f.otherKey, "", &list)
	require.Empty(t, list.Tasks)
}

// TestARoutinePatchAppliesWholeOrNotAtAll: a PATCH that pauses a routine
// and changes its schedule is one change; one with a bad field changes
// nothing, the pause included.
func TestARoutinePatchAppliesWholeOrNotAtAll(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	base := "/api/v1/tenants/acme/routines"
	var r board.Routine
	code, body := f.do("POST", base, f.opKey, fmt.Sprintf(`{"name":"digest","schedule":"@daily","agent":%q}`, f.ada.ID), &r)
	require.Equal(t, 201, code, body)
	code, body = f.do("PATCH", base+"/"+r.ID.String(), f.opKey, `{"paused":true,"schedule":"every day"}`, nil)
	require.Equal(t, 400, code, body)
	var got board.Routine
	f.do("GET", base+"/"+r.ID.String(), f.opKey, "", &got)
	require.False(t, got.Paused, "the bad schedule refused the pause with it")
	require.Equal(t, "@daily", got.Schedule)
	got = board.Routine{}
	code, body = f.do("PATCH", base+"/"+r.ID.String(), f.opKey, `{"paused":true}`, &got)
	require.Equal(t, 200, code, body)
	require.True(t, got.Paused)
	require.Nil(t, got.NextRunAt)
	got = board.Routine{}
	code, body = f.do("PATCH", base+"/"+r.ID.String(), f.opKey, `{"paused":false,"name":"daily digest"}`, &got)
	require.Equal(t, 200, code, body)
	require.False(t, got.Paused)
	require.Equal(t, "daily digest", got.Name)
	require.NotNil(t, got.NextRunAt, "resumed: it has a next run again")
}
