package board_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
)

// rule is one record relationship rule exercised by one caller: run makes
// the call on fresh records and returns its error.
type rule struct {
	name    string
	actor   func(f *fixture) board.Actor
	run     func(t *testing.T, f *fixture, a board.Actor) error
	allowed bool
}

func op(f *fixture) board.Actor  { return f.op }
func ext(f *fixture) board.Actor { return f.ext }
func ada(f *fixture) board.Actor { return f.adaA }
func bob(f *fixture) board.Actor { return f.bobA }
func cy(f *fixture) board.Actor  { return f.cyA }

func str(s string) *string { return &s }

// onBobsTask runs fn on a task the operator created and assigned to bob.
func onBobsTask(fn func(f *fixture, a board.Actor, tk board.Task) error) func(*testing.T, *fixture, board.Actor) error {
	return func(t *testing.T, f *fixture, a board.Actor) error {
		return fn(f, a, f.task(t, "bob's", f.bob.ID, board.KindTask))
	}
}

func update(f *fixture, a board.Actor, tk board.Task) error {
	_, err := f.svc.UpdateTask(f.ctx, a, tk.ID, board.Change{Title: str("renamed")})
	return err
}

func post(f *fixture, a board.Actor, tk board.Task) error {
	_, err := f.svc.Post(f.ctx, a, tk.ID, "progress")
	return err
}

func complete(f *fixture, a board.Actor, tk board.Task) error {
	_, err := f.svc.Complete(f.ctx, a, tk.ID, "done")
	return err
}

func block(f *fixture, a board.Actor, tk board.Task) error {
	_, err := f.svc.Block(f.ctx, a, tk.ID, "waiting")
	return err
}

func claim(f *fixture, a board.Actor, tk board.Task) error {
	_, err := f.svc.Claim(f.ctx, a, tk.ID)
	return err
}

// createdByCy is a task cy created and assigned to bob (cy is unrelated
// to bob, so only being the creator can pass).
func createdByCy(fn func(f *fixture, a board.Actor, tk board.Task) error) func(*testing.T, *fixture, board.Actor) error {
	return func(t *testing.T, f *fixture, a board.Actor) error {
		tk, err := f.svc.CreateTask(f.ctx, f.cyA, board.NewTask{Title: "cy's", Assignee: f.bob.ID})
		require.NoError(t, err)
		return fn(f, a, tk)
	}
}

// claimedByCy is bob's task that cy claimed while a whitelisted pair
// related cy to bob; the pair is gone afterwards, so only being the
// claimer can pass.
func claimedByCy(fn func(f *fixture, a board.Actor, tk board.Task) error) func(*testing.T, *fixture, board.Actor) error {
	return func(t *testing.T, f *fixture, a board.Actor) error {
		tk := f.task(t, "bob's", f.bob.ID, board.KindTask)
		paired := f.cyA
		paired.Tenant.Settings.Delegation.Pairs = [][2]string{{"cy", "bob"}}
		_, err := f.svc.Claim(f.ctx, paired, tk.ID)
		require.NoError(t, err)
		return fn(f, a, tk)
	}
}

func unassigned(fn func(f *fixture, a board.Actor, tk board.Task) error) func(*testing.T, *fixture, board.Actor) error {
	return func(t *testing.T, f *fixture, a board.Actor) error {
		return fn(f, a, f.task(t, "nobody's", uuid.Nil, board.KindTask))
	}
}

func TestRecordRelationshipRules(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rules := []rule{
		// tasks_update and activity_post: assignee, claimer or creator, or related to the assignee.
		{"update: operator", op, onBobsTask(update), true},
		{"update: assignee", bob, onBobsTask(update), true},
		{"update: related to the assignee", ada, onBobsTask(update), true},
		{"update: unrelated", cy, onBobsTask(update), false},
		{"update: external owns no record", ext, onBobsTask(update), false},
		{"update: creator", cy, createdByCy(update), true},
		{"post: operator", op, onBobsTask(post), true},
		{"post: assignee", bob, onBobsTask(post), true},
		{"post: related", ada, onBobsTask(post), true},
		{"post: unrelated", cy, onBobsTask(post), false},
		{"post: external", ext, onBobsTask(post), false},
		{"post: creator", cy, createdByCy(post), true},
		// tasks_complete and tasks_block: assignee or claimer, or related.
		{"complete: operator", op, onBobsTask(complete), true},
		{"complete: assignee", bob, onBobsTask(complete), true},
		{"complete: related", ada, onBobsTask(complete), true},
		{"complete: unrelated", cy, onBobsTask(complete), false},
		{"complete: external", ext, onBobsTask(complete), false},
		{"complete: the creator alone is not enough", cy, createdByCy(complete), false},
		{"block: assignee", bob, onBobsTask(block), true},
		{"block: related", ada, onBobsTask(block), true},
		{"block: unrelated", cy, onBobsTask(block), false},
		{"block: external", ext, onBobsTask(block), false},
		{"block: operator", op, onBobsTask(block), true},
		// tasks_claim: unassigned, or already the caller's; else related.
		{"claim: unassigned", cy, unassigned(claim), true},
		{"claim: already mine", bob, onBobsTask(claim), true},
		{"claim: another's, related", ada, onBobsTask(claim), true},
		{"claim: another's, unrelated", cy, onBobsTask(claim), false},
		{"claim: external", ext, unassigned(claim), false},
		// An unassigned, unclaimed task must be claimed first.
		{"unclaimed: update by a non-creator", ada, unassigned(update), false},
		{"unclaimed: post by a non-creator", ada, unassigned(post), false},
		{"unclaimed: complete", ada, unassigned(complete), false},
		{"unclaimed: operator", op, unassigned(update), true},
		// The claimer passes even when someone else is the assignee.
		{"complete: claimer", cy, claimedByCy(complete), true},
		{"block: claimer", cy, claimedByCy(block), true},
		{"post: claimer", cy, claimedByCy(post), true},
		{"update: claimer", cy, claimedByCy(update), true},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			err := r.run(t, f, r.actor(f))
			if r.allowed {
				require.NoError(t, err)
				return
			}
			refused(t, err)
		})
	}
}

func TestTakingAnothersTaskNeedsTheRelationship(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// cy created the task for bob: as creator cy may edit it, but not take it.
	tk, err := f.svc.CreateTask(f.ctx, f.cyA, board.NewTask{Title: "cy's", Assignee: f.bob.ID})
	require.NoError(t, err)
	_, err = f.svc.UpdateTask(f.ctx, f.cyA, tk.ID, board.Change{Assignee: &f.cy.ID})
	refused(t, err, "creator taking bob's task")
	_, err = f.svc.UpdateTask(f.ctx, f.adaA, tk.ID, board.Change{Assignee: &f.ada.ID})
	require.NoError(t, err, "ada is related to bob")
	_, err = f.svc.UpdateTask(f.ctx, f.op, tk.ID, board.Change{Assignee: &f.cy.ID})
	require.NoError(t, err, "operators are unrestricted")
	_, err = f.svc.UpdateTask(f.ctx, f.ext, tk.ID, board.Change{Assignee: &f.ada.ID})
	refused(t, err, "external")
}

func TestGoalsAcceptanceCriteriaAndProtectedTags(t *testing.T) {
	t.Parallel()
	f := setup(t)
	goal := f.task(t, "ship it", f.bob.ID, board.KindGoal, "outcome:revenue", "grant:memory_write", "plain")
	_, err := f.svc.UpdateTask(f.ctx, f.bobA, goal.ID, board.Change{Title: str("ship less")})
	refused(t, err, "an employee renaming a goal")
	_, err = f.svc.UpdateTask(f.ctx, f.bobA, goal.ID, board.Change{Description: str("x")})
	refused(t, err, "an employee changing a goal's description")
	_, err = f.svc.UpdateTask(f.ctx, f.op, goal.ID, board.Change{Title: str("ship more")})
	require.NoError(t, err)

	_, err = f.svc.UpdateTask(f.ctx, f.op, goal.ID, board.Change{AcceptanceCriteria: str("revenue > 0")})
	refused(t, err, "acceptance_criteria through MCP, even for an operator")
	_, err = f.svc.UpdateTask(f.ctx, f.bobA, goal.ID, board.Change{AcceptanceCriteria: str("none")})
	refused(t, err)
	_, err = f.svc.CreateTask(f.ctx, f.op, board.NewTask{Title: "g", Kind: board.KindGoal, AcceptanceCriteria: "x"})
	refused(t, err)
	api := f.op
	api.MCP = false
	_, err = f.svc.UpdateTask(f.ctx, api, goal.ID, board.Change{AcceptanceCriteria: str("revenue > 0")})
	require.NoError(t, err, "operators set it through the admin API")

	for name, tags := range map[string][]string{
		"remove a protected tag":  {"outcome:revenue", "plain"},
		"reorder protected tags":  {"grant:memory_write", "outcome:revenue", "plain"},
		"add a protected tag":     {"outcome:revenue", "grant:memory_write", "auto-research", "plain"},
		"add a grant: tag at end": {"outcome:revenue", "grant:memory_write", "plain", "grant:x"},
	} {
		_, err = f.svc.UpdateTask(f.ctx, f.bobA, goal.ID, board.Change{Tags: &tags})
		refused(t, err, name)
	}
	ok := []string{"new", "outcome:revenue", "grant:memory_write"}
	_, err = f.svc.UpdateTask(f.ctx, f.bobA, goal.ID, board.Change{Tags: &ok})
	require.NoError(t, err, "other tags move freely around the protected ones")
	_, err = f.svc.CreateTask(f.ctx, f.adaA, board.NewTask{Title: "t", Tags: []string{"auto-research"}})
	refused(t, err, "protected tags in tasks_create")
	_, err = f.svc.CreateTask(f.ctx, f.ext, board.NewTask{Title: "t", Tags: []string{"outcome:x"}})
	refused(t, err, "external")
	_, err = f.svc.CreateTask(f.ctx, f.op, board.NewTask{Title: "t", Tags: []string{"outcome:x", "auto-research"}})
	require.NoError(t, err)
}

func TestParentNeedsARelationship(t *testing.T) {
	t.Parallel()
	f := setup(t)
	parent := f.task(t, "bob's parent", f.bob.ID, board.KindGoal)
	for _, c := range []struct {
		name    string
		a       board.Actor
		allowed bool
	}{{"operator", f.op, true}, {"assignee", f.bobA, true}, {"related", f.adaA, true}, {"unrelated", f.cyA, false}, {"external", f.ext, false}} {
		_, err := f.svc.CreateTask(f.ctx, c.a, board.NewTask{Title: "sub", Parent: parent.ID, ParentGiven: true})
		if c.allowed {
			require.NoError(t, err, c.name)
		} else {
			refused(t, err, c.name)
		}
	}
	_, err := f.svc.CreateTask(f.ctx, f.ext, board.NewTask{Title: "top level"})
	require.NoError(t, err, "creating without a parent is no relationship check")
	_, err = f.svc.CreateTask(f.ctx, f.adaA, board.NewTask{Title: "sub", Parent: uuid.New(), ParentGiven: true})
	code(t, err, "not_found")
}

func TestRoutinesAndRemindersNeedTheEmployeeOrTheRelationship(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r, err := f.svc.CreateRoutine(f.ctx, f.op, board.NewRoutine{Name: "standup", Schedule: "0 9 * * 1-5", Agent: f.bob.ID})
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		a       board.Actor
		allowed bool
	}{{"operator", f.op, true}, {"runs as", f.bobA, true}, {"related", f.adaA, true}, {"unrelated", f.cyA, false}, {"external", f.ext, false}} {
		_, err := f.svc.PauseRoutine(f.ctx, c.a, r.ID.String(), false)
		_, err2 := f.svc.UpdateRoutine(f.ctx, c.a, "standup", board.RoutineChange{Description: str("daily")})
		_, err3 := f.svc.RunRoutine(f.ctx, c.a, r.ID.String())
		for i, e := range []error{err, err2, err3} {
			if c.allowed {
				require.NoError(t, e, "%s %d", c.name, i)
			} else {
				refused(t, e, c.name)
			}
		}
	}
	_, err = f.svc.CreateRoutine(f.ctx, f.cyA, board.NewRoutine{Name: "x", Schedule: "@daily", Agent: f.bob.ID})
	refused(t, err, "a routine running as an unrelated employee")
	_, err = f.svc.CreateRoutine(f.ctx, f.adaA, board.NewRoutine{Name: "x", Schedule: "@daily", Agent: f.bob.ID})
	require.NoError(t, err)
	_, err = f.svc.DeleteRoutine(f.ctx, f.cyA, r.ID.String())
	refused(t, err)

	soon := time.Now().Add(time.Hour)
	for _, c := range []struct {
		name    string
		a       board.Actor
		for_    uuid.UUID
		allowed bool
	}{{"self", f.cyA, uuid.Nil, true}, {"related other", f.adaA, f.bob.ID, true}, {"unrelated other", f.cyA, f.bob.ID, false},
		{"operator", f.op, f.bob.ID, true}, {"external", f.ext, f.bob.ID, false}} {
		_, err := f.svc.CreateReminder(f.ctx, c.a, board.NewReminder{Agent: c.for_, Text: "check", DueAt: soon})
		if c.allowed {
			require.NoError(t, err, c.name)
		} else {
			refused(t, err, c.name)
		}
	}
}

func TestRoutineNamesActOnExactlyOne(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a, err := f.svc.CreateRoutine(f.ctx, f.bobA, board.NewRoutine{Name: "digest", Schedule: "@daily"})
	require.NoError(t, err)
	b, err := f.svc.CreateRoutine(f.ctx, f.bobA, board.NewRoutine{Name: "digest", Schedule: "@hourly"})
	require.NoError(t, err)
	_, err = f.svc.RunRoutine(f.ctx, f.bobA, "digest")
	code(t, err, "conflict")
	require.Contains(t, err.Error(), a.ID.String())
	require.Contains(t, err.Error(), b.ID.String())
	_, err = f.svc.DeleteRoutine(f.ctx, f.bobA, a.ID.String())
	require.NoError(t, err)
	run, err := f.svc.RunRoutine(f.ctx, f.bobA, "digest")
	require.NoError(t, err, "one left: the name is unambiguous")
	require.Equal(t, b.ID, run.Task.OriginID)
	_, err = f.svc.RunRoutine(f.ctx, f.gilA, b.ID.String())
	code(t, err, "not_found", "another tenant's routine")
}

// TestTheRestOfTheRulesByEveryCallerKind covers the rules
// TestRecordRelationshipRules leaves out, each with every kind of caller:
// the operator, an employee that holds the record or is related to its
// holder, an unrelated employee, and an external client (a principal that
// owns no record).
func TestTheRestOfTheRulesByEveryCallerKind(t *testing.T) {
	t.Parallel()
	f := setup(t)
	packet := `{"goal":"finish it"}`
	handoff := func(f *fixture, a board.Actor, tk board.Task) error {
		_, err := f.svc.Handoff(f.ctx, a, tk.ID, f.cy.ID, packet)
		return err
	}
	spawn := func(f *fixture, a board.Actor, tk board.Task) error {
		_, _, err := f.svc.Spawn(f.ctx, a, tk.ID, "", "")
		return err
	}
	messageUnder := func(f *fixture, a board.Actor, tk board.Task) error {
		_, err := f.svc.Message(f.ctx, a, f.ada.ID, "see this", tk.ID)
		return err
	}
	onBobsGoal := func(fn func(f *fixture, a board.Actor, tk board.Task) error) func(*testing.T, *fixture, board.Actor) error {
		return func(t *testing.T, f *fixture, a board.Actor) error {
			return fn(f, a, f.task(t, "bob's goal", f.bob.ID, board.KindGoal))
		}
	}
	renameGoal := func(f *fixture, a board.Actor, tk board.Task) error {
		_, err := f.svc.UpdateTask(f.ctx, a, tk.ID, board.Change{Description: str("new scope")})
		return err
	}
	criteria := func(f *fixture, a board.Actor, tk board.Task) error {
		_, err := f.svc.UpdateTask(f.ctx, a, tk.ID, board.Change{AcceptanceCriteria: str("all green")})
		return err
	}
	claimThenUpdate := func(t *testing.T, f *fixture, a board.Actor) error {
		tk := f.task(t, "nobody's", uuid.Nil, board.KindTask)
		if _, err := f.svc.Claim(f.ctx, a, tk.ID); err != nil {
			return err
		}
		return update(f, a, tk)
	}
	rules := []rule{
		// team_handoff follows tasks_update's rule.
		{"handoff: operator", op, onBobsTask(handoff), true},
		{"handoff: assignee", bob, onBobsTask(handoff), true},
		{"handoff: related", ada, onBobsTask(handoff), true},
		{"handoff: unrelated", cy, onBobsTask(handoff), false},
		{"handoff: external", ext, onBobsTask(handoff), false},
		{"handoff: unclaimed", ada, unassigned(handoff), false},
		// spawn_agent works on a task the caller may touch.
		{"spawn: assignee", bob, onBobsTask(spawn), true},
		{"spawn: related", ada, onBobsTask(spawn), true},
		{"spawn: unrelated", cy, onBobsTask(spawn), false},
		{"spawn: external", ext, onBobsTask(spawn), false},
		// send_to_agent under a task needs a relationship to that task.
		{"message under: operator", op, onBobsTask(messageUnder), true},
		{"message under: assignee", bob, onBobsTask(messageUnder), true},
		{"message under: unrelated", cy, onBobsTask(messageUnder), false},
		{"message under: external", ext, onBobsTask(messageUnder), false},
		// A goal's title and description: operators only.
		{"goal text: operator", op, onBobsGoal(renameGoal), true},
		{"goal text: assignee", bob, onBobsGoal(renameGoal), false},
		{"goal text: related", ada, onBobsGoal(renameGoal), false},
		{"goal text: unrelated", cy, onBobsGoal(renameGoal), false},
		{"goal text: external", ext, onBobsGoal(renameGoal), false},
		// acceptance_criteria: refused to every MCP caller.
		{"criteria: operator through MCP", op, onBobsTask(criteria), false},
		{"criteria: assignee", bob, onBobsTask(criteria), false},
		{"criteria: related", ada, onBobsTask(criteria), false},
		{"criteria: unrelated", cy, onBobsTask(criteria), false},
		{"criteria: external", ext, onBobsTask(criteria), false},
		// An unassigned, unclaimed task: claimed first, then changed.
		{"claim first: employee", cy, claimThenUpdate, true},
		{"claim first: external", ext, claimThenUpdate, false},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			err := r.run(t, f, r.actor(f))
			if r.allowed {
				require.NoError(t, err)
				return
			}
			refused(t, err)
		})
	}
	api := f.op
	api.MCP = false
	goal := f.task(t, "set by the admin API", f.bob.ID, board.KindGoal)
	_, err := f.svc.UpdateTask(f.ctx, api, goal.ID, board.Change{AcceptanceCriteria: str("all green"), Title: str("renamed")})
	require.NoError(t, err, "operators set acceptance criteria and goal text through the admin API")
	_, err = f.svc.Claim(f.ctx, f.op, goal.ID)
	code(t, err, "invalid_argument", "an operator assigns rather than claims")

	r, err := f.svc.CreateRoutine(f.ctx, f.op, board.NewRoutine{Name: "weekly", Schedule: "@weekly", Agent: f.bob.ID})
	require.NoError(t, err)
	_, err = f.svc.DeleteRoutine(f.ctx, f.ext, r.ID.String())
	refused(t, err, "external deleting a routine")
	_, err = f.svc.DeleteRoutine(f.ctx, f.adaA, r.ID.String())
	require.NoError(t, err, "a related employee deletes it")
	rem, err := f.svc.CreateReminder(f.ctx, f.op, board.NewReminder{Agent: f.bob.ID, Text: "x", DueAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = f.svc.CancelReminder(f.ctx, f.cyA, rem.ID)
	refused(t, err, "an unrelated employee cancelling bob's reminder")
	_, err = f.svc.CancelReminder(f.ctx, f.ext, rem.ID)
	refused(t, err, "external cancelling a reminder")
	_, err = f.svc.CancelReminder(f.ctx, f.bobA, rem.ID)
	require.NoError(t, err, "bob cancels his own reminder")
}
