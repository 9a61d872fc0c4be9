package mcpstdio

import (
	"context"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/egressproxy"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/upstream"
)

// The container's CPU: one, as the script sandbox's. Its user is the
// sandbox's unprivileged 1000:1000.
const (
	nanoCPUs = 1_000_000_000
	user     = "1000:1000"
	// stderrKept is how much of a server's standard error is kept, to
	// say why it stopped.
	stderrKept = 2048
)

// server is one stdio server this worker runs.
type server struct {
	key  key
	spec upstream.StdioSpec
	// ready is closed once the start ended, with err set when it failed.
	ready chan struct{}
	err   error
	slots chan struct{} // the server's concurrency limit

	container string
	net       *egressproxy.Network
	conn      types.HijackedResponse
	sess      *upstream.Session
	ended     chan struct{} // closed when the container's output ends

	mu       sync.Mutex
	inFlight int
	lastUsed time.Time
	stderr   []byte
}

func newServer(k key, spec upstream.StdioSpec) *server {
	return &server{key: k, spec: spec, ready: make(chan struct{}), slots: make(chan struct{}, max(1, spec.MaxConcurrent)),
		ended: make(chan struct{}), lastUsed: time.Now()}
}

func (s *server) touch(delta int) {
	s.mu.Lock()
	s.inFlight += delta
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

func (s *server) idle(after time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight == 0 && time.Since(s.lastUsed) > after
}

// exited reports whether the container's output ended (it exited or
// crashed).
func (s *server) exited() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// Write keeps the tail of the server's standard error.
func (s *server) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.stderr = append(s.stderr, p...)
	if over := len(s.stderr) - stderrKept; over > 0 {
		s.stderr = append(s.stderr[:0:0], s.stderr[over:]...)
	}
	s.mu.Unlock()
	return len(p), nil
}

// why says how the server stopped: the last line of its standard error.
func (s *server) why() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(s.stderr)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return "its last words: " + last
	}
	return "its output ended"
}

// start creates and starts the server's container, attached to its
// standard streams, and initializes the MCP session over them.
func (m *Manager) start(ctx context.Context, s *server) error {
	begin := time.Now()
	labels := docker.Labels(docker.MCPStdio, m.cfg.WorkerID, s.key.tenant.String(), s.key.server.String())
	name := "visor-mcp-" + s.key.server.String()[:8] + "-" + randomSuffix()
	env := []string{"HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}
	names := make([]string, 0, len(s.spec.Env))
	for k := range s.spec.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+s.spec.Env[k])
	}
	netMode := container.NetworkMode("none")
	if len(s.spec.AllowHosts) > 0 {
		var err error
		s.net, err = egressproxy.Open(ctx, m.cli, name, labels, s.spec.AllowHosts, egressproxy.Config{Resolver: m.cfg.Resolver,
			DevHosts: m.cfg.DevHosts, Dialer: m.cfg.Dialer, Log: m.log.With("server", s.spec.Name)})
		if err != nil {
			return fault.Newf(fault.Unavailable, err, "upstream server %s: its network could not be made", s.spec.Name)
		}
		netMode = container.NetworkMode(name)
		proxyURL := s.net.URL()
		env = append(env, "https_proxy="+proxyURL, "HTTPS_PROXY="+proxyURL, "http_proxy="+proxyURL, "HTTP_PROXY="+proxyURL)
	}
	cfg := &container.Config{
		Image: s.spec.Image, Cmd: s.spec.Command, User: user, Env: env, Labels: labels,
		OpenStdin: true, StdinOnce: false, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		NetworkDisabled: len(s.spec.AllowHosts) == 0,
	}
	pids := m.cfg.Processes
	host := &container.HostConfig{
		Runtime: m.cfg.Runtime, NetworkMode: netMode, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		ReadonlyRootfs: true, LogConfig: container.LogConfig{Type: "none"},
		Tmpfs:     map[string]string{"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
		Resources: container.Resources{Memory: m.cfg.Memory, MemorySwap: m.cfg.Memory, PidsLimit: &pids, NanoCPUs: nanoCPUs},
	}
	created, err := m.cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fault.Newf(fault.Unavailable, err, "upstream server %s: the image %s is not on the worker (images are never pulled)", s.spec.Name, s.spec.Image)
		}
		return fault.Newf(fault.Unavailable, err, "upstream server %s: its container could not be created", s.spec.Name)
	}
	s.container = created.ID
	s.conn, err = m.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fault.Newf(fault.Unavailable, err, "upstream server %s: its container could not be attached", s.spec.Name)
	}
	out, outW := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(outW, s, s.conn.Reader)
		close(s.ended)           // before the session sees the end of its input
		outW.CloseWithError(err) // nil: io.EOF
	}()
	if err := m.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fault.Newf(fault.Unavailable, err, "upstream server %s: its container could not be started", s.spec.Name)
	}
	k := s.key
	sess, err := upstream.ConnectIO(ctx, out, stdin{s.conn}, m.cfg.Version, func() { m.toolsChanged(k) })
	if err != nil {
		why := "it did not answer the MCP initialize in time"
		if s.exited() {
			why = "it stopped (" + s.why() + ")"
		}
		return fault.Newf(fault.Unavailable, err, "upstream server %s: %s", s.spec.Name, why)
	}
	s.sess = sess
	m.log.Info("stdio server started", "tenant", s.key.tenant, "server", s.spec.Name, "version", s.spec.Version,
		"image", s.spec.Image, "took", time.Since(begin))
	return nil
}

// stdin writes to the container's standard input; closing it half-closes
// the attach connection, which ends the input (the server then exits).
type stdin struct{ c types.HijackedResponse }

func (w stdin) Write(p []byte) (int, error) { return w.c.Conn.Write(p) }
func (w stdin) Close() error                { return w.c.CloseWrite() }

// teardown closes the session and removes the container, network and
// proxy of s (best effort; the janitor removes what is left).
func (m *Manager) teardown(s *server) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The container goes first: its streams end, and the session's
	// reader with them.
	if s.container != "" {
		if err := m.cli.ContainerRemove(ctx, s.container, container.RemoveOptions{Force: true}); err != nil && !docker.IsGone(err) {
			m.log.Warn("remove stdio server container", "server", s.spec.Name, "err", err)
		}
	}
	if s.conn.Conn != nil {
		s.conn.Close()
	}
	if s.sess != nil {
		_ = s.sess.Close()
	}
	if s.net != nil {
		if err := s.net.Close(ctx, m.cli); err != nil {
			m.log.Warn("remove stdio server network", "server", s.spec.Name, "err", err)
		}
	}
}
