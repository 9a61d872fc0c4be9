package workspace

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/workspace"
)

// ErrPinned refuses to stop or reset a workspace whose tree a browser
// session on this worker mounts.
var ErrPinned = fault.New(fault.Conflict,
	"a browser session mounts this workspace's files; it can be stopped or reset once that session ends (computer_session_stop, or the session's idle timeout)")

// Pin lends the live tree of a workspace this worker holds to a browser
// session in the same process: it returns the host folder of the tree
// (what the workspace container has at /workspace) and a release to call
// when the session ends (safe to call more than once). While pinned the
// workspace is not let go as idle, and an operator's stop or reset is
// refused, so the folder stays the live tree under the mount. Only
// the workspace of the named tenant and employee is lent: any other
// answers domain.ErrNotHeld, as does a workspace this worker does not
// hold.
func (m *Manager) Pin(_ context.Context, tenant, agent, id uuid.UUID) (string, func(), error) {
	m.mu.Lock()
	h := m.held[id]
	m.mu.Unlock()
	if h == nil || h.ref.Tenant != tenant || h.ref.Agent != agent || h.tree == nil {
		return "", nil, domain.ErrNotHeld
	}
	h.mu.Lock()
	h.pins++
	h.lastUsed = time.Now()
	h.mu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			h.mu.Lock()
			h.pins--
			h.lastUsed = time.Now()
			h.mu.Unlock()
		})
	}
	return filesDir(h.dir), release, nil
}

// pinned reports whether a browser session mounts the tree.
func (h *held) pinned() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pins > 0
}
