package board_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
)

// heard records the grant changes announced, as the live hub hears them.
type heard struct {
	mu     sync.Mutex
	agents []uuid.UUID
}

func (h *heard) Publish(_ context.Context, e changes.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Kind == changes.GrantChanged {
		h.agents = append(h.agents, e.AgentID)
	}
	return nil
}

func (h *heard) told(agent uuid.UUID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.agents, agent)
}

func (h *heard) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.agents = nil
}

// TestAGoalsGrantTagGrantsItsAssigneeWhileItRuns: an operator's goal
// tagged grant:<tool> grants that scoped tool to its assignee, moves with
// the assignee, stops when the tag goes, and ends with the goal; each
// change is announced for the employees it touches, so their lists follow.
func TestAGoalsGrantTagGrantsItsAssigneeWhileItRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	log := slog.New(slog.DiscardHandler)
	idStore := postgres.NewIdentityStore(f.db)
	pub := &heard{}
	gs := grants.NewService(postgres.NewGrantStore(f.db), idStore, pub, tools.Match, log)
	svc := board.NewService(board.Deps{Store: f.store, Relations: agents.NewDelegation(idStore), Directory: idStore,
		Staff: f.ids, Grants: gs, Logger: log})
	live := func(a identity.Agent) []string {
		got, err := gs.LiveGrants(f.ctx, f.acme.ID, a.ID)
		require.NoError(t, err)
		return got
	}

	goal, err := svc.CreateTask(f.ctx, f.op, board.NewTask{Kind: board.KindGoal, Title: "close the quarter", Assignee: f.ada.ID,
		Tags: []string{"grant:execute_program", "plain"}})
	require.NoError(t, err)
	require.Equal(t, []string{"execute_program"}, live(f.ada), "the assignee holds the tag's tool while the goal runs")
	require.True(t, pub.told(f.ada.ID), "ada's list is recomputed")

	pub.reset()
	_, err = svc.UpdateTask(f.ctx, f.op, goal.ID, board.Change{Assignee: &f.bob.ID})
	require.NoError(t, err)
	require.Empty(t, live(f.ada), "the grant leaves with the assignment")
	require.Equal(t, []string{"execute_program"}, live(f.bob))
	require.True(t, pub.told(f.ada.ID) && pub.told(f.bob.ID))

	pub.reset()
	_, err = svc.UpdateTask(f.ctx, f.op, goal.ID, board.Change{Tags: &[]string{"grant:memory_write"}})
	require.NoError(t, err)
	require.Equal(t, []string{"memory_write"}, live(f.bob), "the tags say which tools")
	require.True(t, pub.told(f.bob.ID))

	_, err = svc.UpdateTask(f.ctx, f.bobA, goal.ID, board.Change{Tags: &[]string{"grant:memory_write", "grant:sandbox_admin"}})
	refused(t, err, "an employee cannot add a grant: tag")

	pub.reset()
	done := board.Cancelled
	_, err = svc.UpdateTask(f.ctx, f.op, goal.ID, board.Change{Status: &done})
	require.NoError(t, err)
	require.Empty(t, live(f.bob), "the grant ends with the goal")
	require.True(t, pub.told(f.bob.ID))
}
