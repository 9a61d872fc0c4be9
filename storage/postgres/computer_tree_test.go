package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/workspace"
)

// lent is a workspace tree the fake workspace worker holds.
type lent struct {
	tenant, agent uuid.UUID
	dir           string
}

// fakePins is the workspace side of a process that runs both kinds: it
// lends only a held tree, and only to its own tenant and employee.
type fakePins struct {
	mu       sync.Mutex
	lent     map[uuid.UUID]lent
	pinned   int
	released int
}

func (p *fakePins) Pin(_ context.Context, tenant, agent, id uuid.UUID) (string, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.lent[id]
	if !ok || l.tenant != tenant || l.agent != agent {
		return "", nil, workspace.ErrNotHeld
	}
	p.pinned++
	var once sync.Once
	return l.dir, func() { once.Do(func() { p.mu.Lock(); p.released++; p.mu.Unlock() }) }, nil
}

// fakeTrees places each employee's workspace on a named worker.
type fakeTrees struct {
	mount computer.TreeMount
	err   error
}

func (t fakeTrees) OpenTree(context.Context, uuid.UUID, uuid.UUID, []string) (computer.TreeMount, error) {
	return t.mount, t.err
}

// An employee with the workspace tools gets its live workspace mounted
// in the browser at /workspace/tree when the session lands in the
// process that holds it; otherwise the session starts without it and the
// result says why in workspace_tree_note. An employee without the
// workspace tools gets neither field, and a start never mounts a tree
// lent for another employee.
func TestASessionMountsTheEmployeesWorkspaceOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	f := computerSetup(t)
	wsA := uuid.New()
	f.pins.lent[wsA] = lent{tenant: f.a.ID, agent: f.agentA.ID, dir: "/trees/a"}
	ada := f.as(f.a, f.agentA, true)
	ada.Agent.Settings.Capabilities.Workspace = true
	start := func(trees computer.Trees) (computer.Started, computer.Spec) {
		t.Helper()
		f.cu.SetTrees(trees)
		st := f.must(t, ada, "computer_session_start", map[string]any{"width": 800, "height": 600}).Structured.(computer.Started)
		f.must(t, ada, "computer_session_stop", map[string]any{"session_id": st.SessionID})
		f.driver.mu.Lock()
		defer f.driver.mu.Unlock()
		return st, f.driver.started[len(f.driver.started)-1]
	}

	// No workspace plane at all.
	st, spec := start(nil)
	require.Empty(t, st.WorkspaceTreePath)
	require.Contains(t, st.WorkspaceTreeNote, "runs no workspace workers")
	require.Empty(t, spec.TreeDir)

	// Placed in the process that holds it: mounted.
	st, spec = start(fakeTrees{mount: computer.TreeMount{ID: wsA, Worker: "worker-1"}})
	require.Equal(t, computer.TreePath, st.WorkspaceTreePath)
	require.Empty(t, st.WorkspaceTreeNote)
	require.Equal(t, "/trees/a", spec.TreeDir)
	require.NotNil(t, spec.TreeRelease)

	// Held by a process with no computer worker: started without it.
	st, spec = start(fakeTrees{mount: computer.TreeMount{ID: wsA, Worker: "ws-only-browser"}})
	require.Empty(t, st.WorkspaceTreePath)
	require.Contains(t, st.WorkspaceTreeNote, "runs no browser sessions")
	require.Empty(t, spec.TreeDir)

	// The worker holding it has no free browser slot: started elsewhere
	// without it, and the pin it took is given back.
	f.driver.full = true
	st, spec = start(fakeTrees{mount: computer.TreeMount{ID: wsA, Worker: "worker-1"}})
	f.driver.full = false
	require.Empty(t, st.WorkspaceTreePath)
	require.Contains(t, st.WorkspaceTreeNote, "could not start a browser")
	require.Contains(t, st.WorkspaceTreeNote, "slot")
	require.Empty(t, spec.TreeDir)
	require.Equal(t, 2, f.pins.pinned)
	require.Equal(t, 1, f.pins.released, "the failed start released its pin")

	// The workspace is not held where the start landed (it moved, or it
	// is another employee's): started without it.
	for _, id := range []uuid.UUID{uuid.New(), wsA} {
		if id == wsA {
			f.pins.lent[wsA] = lent{tenant: f.a.ID, agent: f.agentB.ID, dir: "/trees/a"}
		}
		st, spec = start(fakeTrees{mount: computer.TreeMount{ID: id, Worker: "worker-1"}})
		require.Empty(t, st.WorkspaceTreePath)
		require.Contains(t, st.WorkspaceTreeNote, "moved between workers")
		require.Empty(t, spec.TreeDir)
	}

	// The workspace could not be opened.
	st, _ = start(fakeTrees{err: errors.New("every workspace worker is full")})
	require.Empty(t, st.WorkspaceTreePath)
	require.Contains(t, st.WorkspaceTreeNote, "could not be opened")

	// Without the workspace tools: nothing is said.
	ada.Agent.Settings.Capabilities.Workspace = false
	st, spec = start(fakeTrees{mount: computer.TreeMount{ID: wsA, Worker: "worker-1"}})
	require.Empty(t, st.WorkspaceTreePath)
	require.Empty(t, st.WorkspaceTreeNote)
	require.Empty(t, spec.TreeDir)
	require.Equal(t, 2, f.pins.pinned, "only the starts placed with a held tree pinned it")
}
