// Package workspace runs employees' workspaces on a worker's Docker
// Engine: for each workspace this worker holds, a folder with the
// unpacked tree and one long-lived container of the workspace image that
// mounts it, with the sandbox's locked-down flags. Commands run in that
// container (docker exec) as sessions whose output the worker keeps; the
// file tools work on the folder directly, through os.Root. The Manager is
// the worker's services/workspace.Host.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"github.com/google/uuid"

	"github.com/visorhq/visor/docker/egressproxy"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/secrets"
	domain "github.com/visorhq/visor/services/workspace"
)

// Config configures a Manager.
type Config struct {
	Image    string // the workspace image; never pulled
	WorkerID string
	// BaseDir holds each held workspace's folder (default: the system
	// temporary directory).
	BaseDir string
	// MaxWorkspaces is how many workspaces this worker holds at once.
	MaxWorkspaces int
	// IdleAfter is how long a workspace with no call and no running
	// session stays open before it is saved and let go.
	IdleAfter time.Duration
	// SaveEvery is how often changed trees are saved to Postgres.
	SaveEvery time.Duration
	// Runtime is the OCI runtime ("runsc"); empty: the engine's default.
	Runtime string
	// Memory, in bytes (default 2 GiB).
	Memory int64
	// Keys open the sealed variables of the Skills commands run with
	// (nil: a Skill with variables cannot run here).
	Keys *secrets.Keyring
	// FS is the filesystem a workspace's tree lives on: FSTmpfs (the
	// default; the quota holds for commands too) or FSFolder.
	FS string
	// Resolver and DevHosts pin allowed hosts for the egress proxy
	// (egressproxy.Pin), as for computer use.
	Resolver egressproxy.Resolver
	DevHosts []string
	Dialer   egressproxy.Dialer
}

// Stores are where workspaces, artifacts and Skills live.
type Stores struct {
	Workspaces domain.Store
	Artifacts  domain.ArtifactStore
	Skills     SkillSource
}

// SkillSource loads an installed Skill's packed files and its sealed
// variables for commands that run with it.
type SkillSource interface {
	SkillArchive(ctx context.Context, tenantID, agentID uuid.UUID, name string, version int) ([]byte, error)
	domain.EnvSource
}

// Manager holds this worker's workspaces. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	cli    *client.Client
	stores Stores
	log    *slog.Logger

	mu      sync.Mutex
	held    map[uuid.UUID]*held
	opening map[uuid.UUID]chan struct{}
}

var _ domain.Host = (*Manager)(nil)

// New returns a Manager on the Docker Engine named by the environment.
func New(cfg Config, stores Stores, log *slog.Logger) (*Manager, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if cfg.BaseDir == "" {
		cfg.BaseDir = os.TempDir()
	}
	if cfg.MaxWorkspaces <= 0 {
		cfg.MaxWorkspaces = 16
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = 15 * time.Second
	}
	if cfg.Memory <= 0 {
		cfg.Memory = 2 << 30
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	switch cfg.FS {
	case "", FSTmpfs:
		cfg.FS = FSTmpfs
		if err := probeMount(cfg.BaseDir); err != nil {
			return nil, err
		}
	case FSFolder:
	default:
		return nil, fmt.Errorf("workspace filesystem %q: want %s or %s", cfg.FS, FSTmpfs, FSFolder)
	}
	return &Manager{cfg: cfg, cli: cli, stores: stores, log: log, held: map[uuid.UUID]*held{}, opening: map[uuid.UUID]chan struct{}{}}, nil
}

// Client is the engine client (tests inspect what the manager made).
func (m *Manager) Client() *client.Client { return m.cli }

// WorkerID is the name this manager runs under.
func (m *Manager) WorkerID() string { return m.cfg.WorkerID }

// Held is how many workspaces this worker holds, opening ones included.
func (m *Manager) Held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held) + len(m.opening)
}

// Do implements domain.Host.
func (m *Manager) Do(ctx context.Context, ref domain.Ref, op domain.Op, open bool) (domain.Answer, error) {
	h, err := m.get(ctx, ref, open)
	if err != nil {
		return domain.Answer{}, err
	}
	h.touch()
	a, err := h.do(ctx, m, op)
	if err == nil && (a.Session != nil || len(a.Sessions) > 0) && m.stores.Skills != nil {
		// Skill variable values never leave the worker in an answer.
		r, rerr := domain.Redactor(ctx, m.stores.Skills, m.cfg.Keys, ref.Tenant, ref.Agent)
		if rerr != nil {
			return domain.Answer{}, rerr
		}
		a.Redact(r)
	}
	return a, err
}

// get returns the held workspace, opening it when asked and needed.
func (m *Manager) get(ctx context.Context, ref domain.Ref, open bool) (*held, error) {
	for {
		m.mu.Lock()
		h := m.held[ref.ID]
		wait := m.opening[ref.ID]
		if h != nil || wait != nil || !open {
			m.mu.Unlock()
			switch {
			case h != nil && h.ref.Tenant == ref.Tenant && h.ref.Agent == ref.Agent:
				if h.setQuota(ref) {
					m.resize(h)
				}
				return h, nil
			case h != nil || wait == nil:
				return nil, domain.ErrNotHeld
			}
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if len(m.held)+len(m.opening) >= m.cfg.MaxWorkspaces {
			m.mu.Unlock()
			return nil, fault.New(fault.Unavailable, "this workspace worker is full")
		}
		done := make(chan struct{})
		m.opening[ref.ID] = done
		m.mu.Unlock()
		h, err := m.open(ctx, ref)
		m.mu.Lock()
		delete(m.opening, ref.ID)
		if err == nil {
			m.held[ref.ID] = h
		}
		m.mu.Unlock()
		close(done)
		return h, err
	}
}

// open takes the lease, restores the last snapshot into a fresh folder
// and starts the container; on failure it undoes what it did.
func (m *Manager) open(ctx context.Context, ref domain.Ref) (_ *held, err error) {
	ctx = context.WithoutCancel(ctx) // a caller that goes away must not leave half a workspace
	ws, err := m.stores.Workspaces.Lease(ctx, ref.Tenant, ref.ID, m.cfg.WorkerID, domain.LeaseTTL)
	if err != nil {
		return nil, err
	}
	h := &held{ref: ref, ws: ws, sessions: map[string]*session{}, lastUsed: time.Now()}
	defer func() {
		if err != nil {
			h.teardown(m)
			_ = m.stores.Workspaces.Release(ctx, ref.Tenant, ref.ID, m.cfg.WorkerID)
		}
	}()
	start := time.Now()
	if err := m.restore(ctx, h); err != nil {
		return nil, err
	}
	if err := m.startContainer(ctx, h); err != nil {
		return nil, err
	}
	m.log.Info("workspace opened", "tenant", ref.Tenant, "workspace", ref.ID, "revision", ws.Revision,
		"bytes", ws.BytesUsed, "took", time.Since(start))
	return h, nil
}

// dir is the folder of a held workspace: its tree is dir/files, its
// Skills dir/skills.
func (m *Manager) dir(id uuid.UUID) string {
	return filepath.Join(m.cfg.BaseDir, "visor-ws-"+workerTag(m.cfg.WorkerID)+"-"+id.String())
}

// restore unpacks the workspace's last snapshot into a fresh folder: on
// a filesystem the size of the quota when the worker mounts one.
func (m *Manager) restore(ctx context.Context, h *held) error {
	h.dir = m.dir(h.ref.ID)
	if err := os.RemoveAll(h.dir); err != nil {
		return err
	}
	uid, gid := containerUser()
	for _, d := range []string{h.dir, filepath.Join(h.dir, "files"), filepath.Join(h.dir, "skills")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			_ = os.Chown(d, uid, gid)
		}
	}
	quota := max(h.ref.Quota, h.ws.Quota)
	if m.cfg.FS == FSTmpfs {
		// Room for a snapshot saved before a quota was lowered (and for
		// each file's last page); shrunk to the quota once unpacked.
		if err := mountQuota(filesDir(h.dir), 2*quota+int64(h.ws.FilesUsed+16)*page, uid, gid); err != nil {
			return err
		}
		h.mounted = true
	}
	tree, err := domain.OpenTree(filesDir(h.dir), uid, gid)
	if err != nil {
		return err
	}
	h.tree = tree
	if h.ws.Revision == 0 {
		return m.fit(h)
	}
	pr, pw := ioPipe()
	errc := make(chan error, 1)
	go func() {
		err := m.stores.Workspaces.Load(ctx, h.ref.Tenant, h.ref.ID, h.ws.Revision, pw)
		pw.CloseWithError(err)
		errc <- err
	}()
	uerr := domain.Unpack(pr, tree.Root, 2*quota, uid, gid)
	pr.CloseWithError(errors.New("unpack ended"))
	if lerr := <-errc; lerr != nil && uerr == nil {
		return fmt.Errorf("load snapshot: %w", lerr)
	}
	if uerr != nil {
		return uerr
	}
	return m.fit(h)
}

// fit sizes a held workspace's filesystem to its quota, or to what it
// holds when that is more (a quota lowered since the last save: nothing
// may grow until enough is removed).
func (m *Manager) fit(h *held) error {
	if !h.mounted {
		return nil
	}
	h.mu.Lock()
	quota := h.ref.Quota
	if quota <= 0 {
		quota = max(h.ws.Quota, domain.DefaultQuota)
	}
	h.mu.Unlock()
	return resizeQuota(filesDir(h.dir), quota)
}

// resize applies a changed quota to a held workspace's filesystem.
func (m *Manager) resize(h *held) {
	if err := m.fit(h); err != nil {
		m.log.Warn("resize a workspace filesystem", "workspace", h.ref.ID, "err", err)
	}
}

// Save packs a held workspace's tree and stores it as the next revision,
// when it changed since the last save.
func (m *Manager) save(ctx context.Context, h *held) error {
	if !h.takeDirty() {
		return nil
	}
	f, err := os.CreateTemp(m.cfg.BaseDir, "visor-ws-snap-")
	if err != nil {
		h.markDirty()
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bytes, files, err := domain.Pack(h.tree.Root, f)
	if err == nil {
		_, err = f.Seek(0, 0)
	}
	if err == nil {
		var rev int64
		rev, err = m.stores.Workspaces.Save(ctx, h.ref.Tenant, h.ref.ID, m.cfg.WorkerID, f, bytes, files)
		h.setUsage(bytes, files, rev)
	}
	if err != nil {
		h.markDirty()
		return fmt.Errorf("save workspace %s: %w", h.ref.ID, err)
	}
	return nil
}

// close saves (unless discard) and lets a workspace go: its sessions end,
// its container and folder are removed and its lease released.
func (m *Manager) close(ctx context.Context, h *held, discard bool) error {
	var err error
	if h.endSessions(m) {
		h.markDirty() // what they wrote before they ended is saved
	}
	if !discard {
		err = m.save(ctx, h)
	}
	m.mu.Lock()
	if m.held[h.ref.ID] == h {
		delete(m.held, h.ref.ID)
	}
	m.mu.Unlock()
	h.teardown(m)
	if err != nil {
		return err // the lease lapses; the next worker restores the last saved revision
	}
	return m.stores.Workspaces.Release(ctx, h.ref.Tenant, h.ref.ID, m.cfg.WorkerID)
}

// containerUser is the user commands run as: the worker's own, or
// 1000:1000 when the worker runs as root (as the script sandbox).
func containerUser() (uid, gid int) {
	uid, gid = os.Getuid(), os.Getgid()
	if uid == 0 {
		return 1000, 1000
	}
	return uid, gid
}
