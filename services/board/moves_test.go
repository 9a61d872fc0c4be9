package board_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
)

// TestEveryToolThatMovesATaskAppliesOneRule: cy created a task for bob and
// has no relationship with bob. As its creator cy may edit it, but taking it
// back is refused the same way whichever tool moves it: tasks_update naming
// cy, team_handoff to cy, or spawn_agent (the spawned employee reports to
// cy, so the task would be cy's again).
func TestEveryToolThatMovesATaskAppliesOneRule(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tk, err := f.svc.CreateTask(f.ctx, f.cyA, board.NewTask{Title: "cy's, for bob", Assignee: f.bob.ID})
	require.NoError(t, err)
	_, err = f.svc.UpdateTask(f.ctx, f.cyA, tk.ID, board.Change{Assignee: &f.cy.ID})
	refused(t, err, "tasks_update taking it back")
	_, err = f.svc.Handoff(f.ctx, f.cyA, tk.ID, f.cy.ID, `{"goal":"mine again"}`)
	refused(t, err, "team_handoff to itself")
	_, _, err = f.svc.Spawn(f.ctx, f.cyA, tk.ID, "cys-helper", "")
	refused(t, err, "spawn_agent for the creator's own subordinate")
	_, err = f.ids.AgentByName(f.ctx, f.acme.ID, "cys-helper")
	require.Error(t, err, "a refused spawn creates nobody")

	// Related callers and operators move it as before.
	_, err = f.svc.Handoff(f.ctx, f.adaA, tk.ID, f.ada.ID, `{"goal":"ada takes it"}`)
	require.NoError(t, err, "ada is related to bob")
	_, err = f.svc.Handoff(f.ctx, f.op, tk.ID, f.cy.ID, `{"goal":"to cy"}`)
	require.NoError(t, err, "operators are unrestricted")
	got, err := f.svc.Handoff(f.ctx, f.cyA, tk.ID, f.bob.ID, `{"goal":"back to bob"}`)
	require.NoError(t, err, "the assignee hands its own task on")
	require.Equal(t, f.bob.ID, got.AssigneeID)
}

// TestASpawnedEmployeeHoldsNoMoreThanItsCreator: an employee whose settings
// deny tools, keep an allow list, hold scoped tools and [permissions]
// flags spawns a helper that carries all of them.
func TestASpawnedEmployeeHoldsNoMoreThanItsCreator(t *testing.T) {
	t.Parallel()
	f := setup(t)
	no := false
	restricted := identity.AgentSettings{
		Capabilities: identity.Capabilities{DeniedTools: []string{"memory_write"}, AllowedTools: []string{"tasks_*", "memory_*"},
			ScopedTools: []string{"execute_program"}, DBSources: []string{"crm"}},
		Permissions: &identity.Permissions{CanSendCrossAgent: &no},
	}
	lead, err := f.ids.UpdateAgent(f.ctx, f.acme.ID, f.ada.ID, func(a *identity.Agent) error { a.Settings = restricted; return nil })
	require.NoError(t, err)
	tk := f.task(t, "needs help", lead.ID, board.KindTask)
	helper, _, err := f.svc.Spawn(f.ctx, f.employee(f.acme, lead), tk.ID, "", "")
	require.NoError(t, err)
	c := helper.Settings.Capabilities
	require.Contains(t, c.DeniedTools, "memory_write")
	require.Equal(t, []string{"tasks_*", "memory_*"}, c.AllowedTools)
	require.Contains(t, c.ScopedTools, "execute_program")
	require.Empty(t, c.DBSources, "a source is never given by spawning")
	p := helper.Settings.Permissions
	require.NotNil(t, p)
	require.False(t, *p.CanSendCrossAgent, "the creator's false flag")
	require.False(t, *p.CanCreateAgents, "a spawned employee's own limits stay")
	require.Equal(t, "eng", helper.Department)
	require.Equal(t, lead.ID, helper.ReportsTo)
}
