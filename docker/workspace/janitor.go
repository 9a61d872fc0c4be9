package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/docker"
	domain "github.com/visorhq/visor/services/workspace"
)

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

// workerTag names a worker's folders: a short hash-free form of its id
// safe in a file name.
func workerTag(worker string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, worker)
}

// NewJanitor returns the manager's housekeeping on the shared janitor:
// at start it removes what this worker id's earlier life left (its
// containers, networks and folders; their leases lapse, and the next
// worker restores the last saved revision); every period it renews the
// leases it holds, saves changed trees every SaveEvery, and lets idle
// workspaces go (saved first); at shutdown it saves and lets every
// workspace go.
func NewJanitor(m *Manager, period time.Duration) *docker.Janitor {
	var lastSave time.Time
	return &docker.Janitor{Every: period,
		First: func(ctx context.Context) { m.sweepOwn(ctx) },
		Tick: func(ctx context.Context) {
			m.renew(ctx)
			if time.Since(lastSave) >= m.cfg.SaveEvery {
				lastSave = time.Now()
				m.SaveAll(ctx)
			}
			m.ReapIdle(ctx)
		},
		Last: func() { m.CloseAll(context.Background()) },
	}
}

func (m *Manager) list() []*held {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*held, 0, len(m.held))
	for _, h := range m.held {
		out = append(out, h)
	}
	return out
}

// renew extends the leases this worker holds; a workspace whose lease
// was taken (the worker was thought dead) is let go without saving.
func (m *Manager) renew(ctx context.Context) {
	hs := m.list()
	if len(hs) == 0 {
		return
	}
	ids := make([]uuid.UUID, len(hs))
	for i, h := range hs {
		ids[i] = h.ref.ID
	}
	lost, err := m.stores.Workspaces.Renew(ctx, m.cfg.WorkerID, ids, domain.LeaseTTL)
	if err != nil {
		m.log.Warn("renew workspace leases", "err", err)
		return
	}
	for _, id := range lost {
		for _, h := range hs {
			if h.ref.ID == id {
				m.log.Warn("workspace lease lost; letting it go", "workspace", id)
				m.mu.Lock()
				delete(m.held, id)
				m.mu.Unlock()
				h.teardown(m)
			}
		}
	}
}

// SaveAll saves every changed tree.
func (m *Manager) SaveAll(ctx context.Context) {
	for _, h := range m.list() {
		if err := m.save(ctx, h); err != nil {
			m.log.Warn("save workspace", "workspace", h.ref.ID, "err", err)
		}
	}
}

// ReapIdle saves and lets go every workspace idle for IdleAfter; it
// returns how many.
func (m *Manager) ReapIdle(ctx context.Context) int {
	n := 0
	for _, h := range m.list() {
		if h.idle(m.cfg.IdleAfter) {
			if err := m.close(ctx, h, false); err != nil {
				m.log.Warn("let an idle workspace go", "workspace", h.ref.ID, "err", err)
			}
			n++
		}
	}
	return n
}

// CloseAll saves and lets go every workspace (shutdown).
func (m *Manager) CloseAll(ctx context.Context) {
	for _, h := range m.list() {
		if err := m.close(ctx, h, false); err != nil {
			m.log.Warn("let a workspace go at shutdown", "workspace", h.ref.ID, "err", err)
		}
	}
}

// sweepOwn removes the containers, networks and folders this worker id
// left behind.
func (m *Manager) sweepOwn(ctx context.Context) {
	if _, err := docker.Sweep(ctx, m.cli, docker.Workspace, m.cfg.WorkerID, 0, nil); err != nil {
		m.log.Warn("sweep workspace containers", "err", err)
	}
	prefix := "visor-ws-" + workerTag(m.cfg.WorkerID) + "-"
	entries, _ := os.ReadDir(m.cfg.BaseDir)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			if _, err := uuid.Parse(strings.TrimPrefix(e.Name(), prefix)); err == nil {
				dir := filepath.Join(m.cfg.BaseDir, e.Name())
				if err := unmountQuota(filesDir(dir)); err != nil {
					m.log.Warn("unmount a left workspace filesystem", "err", err)
				}
				_ = os.RemoveAll(dir)
			}
		}
	}
}
