// Package browser runs computer-use sessions on a worker: one container of
// the browser image per session, on its own internal Docker network whose
// only way out is the session's egress proxy on the worker, driven over the
// Chrome DevTools Protocol. Manager implements computer.Driver for the
// sessions this worker holds.
package browser

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
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
)

// The limits of every session container.
const (
	Memory    = 1 << 30 // bytes, no swap beyond it
	Processes = 512
	NanoCPUs  = 1e9
	ShmSize   = 256 << 20
	// ActionTimeout bounds one action, a navigation's page load included.
	ActionTimeout = 30 * time.Second
	// ReadyTimeout bounds how long a new container may take to answer on
	// its DevTools port.
	ReadyTimeout = 20 * time.Second
)

// Config says which image sessions run and how the worker reaches out.
type Config struct {
	Image    string
	WorkerID string
	// TempDir holds each session's mounted workspace copy.
	TempDir string
	// Resolver pins allowed hosts at session start (default: the system's).
	Resolver egressproxy.Resolver
	// DevHosts are development hosts (lower case) whose pinned addresses
	// may be private; every other host keeps only public ones.
	DevHosts []string
	// Dialer opens the egress proxy's upstream connections (default: net).
	Dialer egressproxy.Dialer
	// ExtraFlags are added to Chromium's command line (tests trust their
	// own certificate with --ignore-certificate-errors-spki-list).
	ExtraFlags []string
	// IdleTimeout ends sessions no action touched for this long
	// (default computer.IdleTimeout).
	IdleTimeout time.Duration
	// MaxSessions is how many sessions this worker holds at once, those
	// starting included (default 8).
	MaxSessions int
}

// Manager holds this worker's sessions. It is safe for concurrent use.
type Manager struct {
	cfg Config
	cli *client.Client
	log *slog.Logger

	mu       sync.Mutex
	sessions map[uuid.UUID]*session
	starting int
}

var _ computer.Driver = (*Manager)(nil)

// New returns a manager on the Docker Engine named by the environment.
func New(cfg Config, log *slog.Logger) (*Manager, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 8
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = computer.IdleTimeout
	}
	return &Manager{cfg: cfg, cli: cli, log: log, sessions: map[uuid.UUID]*session{}}, nil
}

// Client is the engine client, for tests that inspect what a session made.
func (m *Manager) Client() *client.Client { return m.cli }

// Start creates and starts a session's container and connects to it.
func (m *Manager) Start(ctx context.Context, spec computer.Spec) (string, error) {
	if err := computer.CheckViewport(int64(spec.Width), int64(spec.Height)); err != nil {
		return "", err
	}
	m.mu.Lock()
	if len(m.sessions)+m.starting >= m.cfg.MaxSessions {
		m.mu.Unlock()
		return "", fault.New(fault.Unavailable, "every browser session slot of this deployment's worker is in use (%d); retry later", m.cfg.MaxSessions)
	}
	m.starting++
	m.mu.Unlock()
	s, err := m.create(ctx, spec)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starting--
	if err != nil {
		return "", err
	}
	m.sessions[spec.Session] = s
	return m.cfg.WorkerID, nil
}

// Held is how many sessions this worker holds, those starting not
// included.
func (m *Manager) Held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// Do performs one action in a session this worker holds.
func (m *Manager) Do(ctx context.Context, r computer.Ref, a computer.Action) (computer.Outcome, error) {
	s, err := m.get(r)
	if err != nil {
		return computer.Outcome{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUsed = time.Now()
	o, err := s.do(ctx, a)
	failed := err != nil || o.FullyMasked == computer.MaskDetectionFail || o.FullyMasked == computer.MaskUnreadable
	if failed && !s.alive(context.WithoutCancel(ctx), m.cli) {
		m.remove(context.WithoutCancel(ctx), r.Session)
		return computer.Outcome{}, fmt.Errorf("session %s: its container is gone: %w", r.Session, computer.ErrLost)
	}
	return o, err
}

// Stop removes a session's container, network, proxy and files.
func (m *Manager) Stop(ctx context.Context, r computer.Ref) error {
	if _, err := m.get(r); err != nil {
		return err
	}
	return m.remove(ctx, r.Session)
}

// Put writes a file just saved to the session's workspace into its mounted
// copy (replacing it atomically), so the copy follows the workspace.
func (m *Manager) Put(ctx context.Context, r computer.Ref, f computer.File) error {
	s, err := m.get(r)
	if err != nil {
		return err
	}
	if err := computer.CheckPath(f.Path); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return nil // no workspace mounted
	}
	p := filepath.Join(s.dir, "files", filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(f.Content)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}

func (m *Manager) get(r computer.Ref) (*session, error) {
	if r.Worker != m.cfg.WorkerID {
		return nil, fault.New(fault.Unavailable, "your session runs on worker %s, which this server cannot reach; retry later or stop the session", r.Worker)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[r.Session]
	if !ok || s.spec.Tenant != r.Tenant {
		// This worker holds every session it started until it stops them:
		// one it does not know was stopped here, or this worker restarted.
		return nil, fmt.Errorf("session %s is not held by worker %s: %w", r.Session, m.cfg.WorkerID, computer.ErrLost)
	}
	return s, nil
}

func (m *Manager) remove(ctx context.Context, id uuid.UUID) error {
	m.mu.Lock()
	s, ok := m.sessions[id]
	delete(m.sessions, id)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return s.teardown(ctx, m.cli)
}

// Len is how many sessions this worker holds.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// Close stops every session this worker holds.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	ids := make([]uuid.UUID, 0, len(m.sessions))
	for id := range m.sessions {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, m.remove(ctx, id))
	}
	return errors.Join(errs...)
}

// unavailable reports a session that cannot be started here.
func unavailable(why string, err error) error {
	return fault.Newf(fault.Unavailable, err, "computer use is unavailable on this worker: %s", why)
}
