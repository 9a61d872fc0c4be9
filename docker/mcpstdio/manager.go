// Package mcpstdio runs tenants' stdio MCP servers on a worker's Docker
// Engine: one container per server (of a tenant) on this worker, started
// from an image on the allow list (never pulled) with the script
// sandbox's locked-down flags, its MCP session kept open over the
// container's standard input and output between calls, started again when
// it crashed or its settings changed, and removed when idle. The network
// is none, or, when the server's allow_hosts name hosts, an internal
// network whose only way out is an egress proxy on the worker that tunnels
// HTTPS to those hosts alone (as computer use and workspaces do). The
// Manager is the worker's upstream.StdioHost.
package mcpstdio

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"github.com/google/uuid"

	"github.com/visorhq/visor/docker/egressproxy"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/upstream"
)

// Config configures a Manager.
type Config struct {
	WorkerID string
	// Images is the allow list: a server's image must be on it. Images
	// are never pulled.
	Images []string
	// MaxServers is how many servers this worker runs at once.
	MaxServers int
	// IdleAfter is how long a server with no call stays warm.
	IdleAfter time.Duration
	// StartTimeout bounds a container's start and the MCP initialize.
	StartTimeout time.Duration
	// Runtime is the OCI runtime ("runsc"); empty: the engine's default.
	Runtime string
	// Memory, in bytes (default 512 MiB), and Processes (default 128)
	// bound one server's container.
	Memory    int64
	Processes int64
	// Resolver, DevHosts and Dialer pin allowed hosts for the egress
	// proxy, as computer use and workspaces do (docker/egressproxy).
	Resolver egressproxy.Resolver
	DevHosts []string
	Dialer   egressproxy.Dialer
	// Version is Visor's, sent as the MCP client's.
	Version string
}

// key names a server: its tenant and id.
type key struct{ tenant, server uuid.UUID }

// Manager runs this worker's stdio servers. It is safe for concurrent use.
type Manager struct {
	cfg Config
	cli *client.Client
	log *slog.Logger

	mu      sync.Mutex
	servers map[key]*server
	watches map[key]map[*func()]struct{}
	starts  int // containers started, for tests and the log
}

var _ upstream.StdioHost = (*Manager)(nil)

// New returns a Manager on the Docker Engine named by the environment.
func New(cfg Config, log *slog.Logger) (*Manager, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxServers <= 0 {
		cfg.MaxServers = 32
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = time.Minute
	}
	if cfg.Memory <= 0 {
		cfg.Memory = 512 << 20
	}
	if cfg.Processes <= 0 {
		cfg.Processes = 128
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	return &Manager{cfg: cfg, cli: cli, log: log, servers: map[key]*server{}, watches: map[key]map[*func()]struct{}{}}, nil
}

// Client is the engine client (tests inspect what the manager made).
func (m *Manager) Client() *client.Client { return m.cli }

// WorkerID is the name this manager runs under.
func (m *Manager) WorkerID() string { return m.cfg.WorkerID }

// Running is how many servers this worker runs, starting ones included.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.servers)
}

// Starts is how many containers this manager has started.
func (m *Manager) Starts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.starts
}

// InFlight is how many calls a server of tenant is running on this worker.
func (m *Manager) InFlight(tenant, server uuid.UUID) int {
	m.mu.Lock()
	s := m.servers[key{tenant, server}]
	m.mu.Unlock()
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// Start implements upstream.StdioHost.
func (m *Manager) Start(ctx context.Context, tenant uuid.UUID, spec upstream.StdioSpec) error {
	_, err := m.get(ctx, tenant, spec)
	return err
}

// Watch implements upstream.StdioHost.
func (m *Manager) Watch(ctx context.Context, tenant, id uuid.UUID, changed func()) {
	k := key{tenant, id}
	fn := &changed
	m.mu.Lock()
	if m.watches[k] == nil {
		m.watches[k] = map[*func()]struct{}{}
	}
	m.watches[k][fn] = struct{}{}
	m.mu.Unlock()
	<-ctx.Done()
	m.mu.Lock()
	delete(m.watches[k], fn)
	if len(m.watches[k]) == 0 {
		delete(m.watches, k)
	}
	m.mu.Unlock()
}

// toolsChanged tells every watch of k.
func (m *Manager) toolsChanged(k key) {
	m.mu.Lock()
	var fns []func()
	for fn := range m.watches[k] {
		fns = append(fns, *fn)
	}
	m.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Tools implements upstream.StdioHost.
func (m *Manager) Tools(ctx context.Context, tenant uuid.UUID, spec upstream.StdioSpec, max int) ([]upstreams.Tool, error) {
	var out []upstreams.Tool
	err := m.use(ctx, tenant, spec, func(s *server) error {
		var err error
		out, err = s.sess.Tools(ctx, max)
		return err
	})
	return out, err
}

// Call implements upstream.StdioHost.
func (m *Manager) Call(ctx context.Context, tenant uuid.UUID, spec upstream.StdioSpec, tool string, args json.RawMessage) (upstreams.Result, error) {
	var out upstreams.Result
	err := m.use(ctx, tenant, spec, func(s *server) error {
		var err error
		out, err = s.sess.Call(ctx, tool, args)
		return err
	})
	return out, err
}

// use runs fn on the server's session within its concurrency limit; a
// failure at the transport (the server crashed, its output ended) ends
// the container, and the next call starts it again.
func (m *Manager) use(ctx context.Context, tenant uuid.UUID, spec upstream.StdioSpec, fn func(*server) error) error {
	s, err := m.get(ctx, tenant, spec)
	if err != nil {
		return err
	}
	select {
	case s.slots <- struct{}{}:
	default:
		return fault.New(fault.RateLimited, "upstream server %s is running its limit of %d calls; retry when one finishes", spec.Name, cap(s.slots))
	}
	s.touch(+1)
	err = fn(s)
	s.touch(-1)
	<-s.slots
	if err != nil && !fault.Is(err, fault.Invalid) {
		if s.exited() {
			m.drop(s)
			return fault.Newf(fault.Unavailable, err, "upstream server %s stopped (%s); the next call starts it again", spec.Name, s.why())
		}
	}
	return err
}

// get returns the running server of k at spec's version, starting it when
// there is none, when its container ended, or when it runs an older
// version. Concurrent callers share one start.
func (m *Manager) get(ctx context.Context, tenant uuid.UUID, spec upstream.StdioSpec) (*server, error) {
	if !slices.Contains(m.cfg.Images, spec.Image) {
		return nil, fault.New(fault.Forbidden, "upstream server %s: the image %s is not on this worker's allow list of stdio images", spec.Name, spec.Image)
	}
	k := key{tenant, spec.Server}
	for {
		m.mu.Lock()
		s := m.servers[k]
		if s != nil {
			select {
			case <-s.ready:
				if s.err == nil && (s.spec.Version != spec.Version || s.exited()) {
					delete(m.servers, k)
					m.mu.Unlock()
					go m.teardown(s)
					continue
				}
			default:
			}
			m.mu.Unlock()
			select {
			case <-s.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if s.err != nil {
				return nil, s.err
			}
			if s.spec.Version != spec.Version || s.exited() {
				continue
			}
			return s, nil
		}
		if len(m.servers) >= m.cfg.MaxServers {
			m.mu.Unlock()
			return nil, fault.New(fault.Unavailable, "this worker runs its limit of %d stdio servers", m.cfg.MaxServers)
		}
		s = newServer(k, spec)
		m.servers[k] = s
		m.starts++
		m.mu.Unlock()
		// A caller that goes away must not leave half a server.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.StartTimeout)
		s.err = m.start(sctx, s)
		cancel()
		close(s.ready)
		if s.err != nil {
			m.drop(s)
		}
		return s, s.err
	}
}

// drop forgets s (when it is still its key's server) and removes its
// container.
func (m *Manager) drop(s *server) {
	m.mu.Lock()
	if m.servers[s.key] == s {
		delete(m.servers, s.key)
	}
	m.mu.Unlock()
	m.teardown(s)
}

func (m *Manager) list() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s)
	}
	return out
}

// ReapIdle removes the servers with no call running and none for
// IdleAfter, and those whose container ended; it returns how many.
func (m *Manager) ReapIdle() int {
	n := 0
	for _, s := range m.list() {
		select {
		case <-s.ready:
		default:
			continue // starting
		}
		if s.idle(m.cfg.IdleAfter) || s.exited() {
			m.drop(s)
			n++
		}
	}
	return n
}

// CloseAll removes every server (shutdown).
func (m *Manager) CloseAll() {
	for _, s := range m.list() {
		<-s.ready
		m.drop(s)
	}
}
