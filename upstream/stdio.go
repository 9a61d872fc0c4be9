package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/upstreams"
)

// The worker plane's names for stdio servers. A session's watch goes to
// any worker of StdioPool, which starts the server's container (or reuses
// the one it runs) and reports its tools/list_changed; every tool listing
// and call then goes to that worker.
const (
	StdioPool      = "mcpstdio"
	KindStdioWatch = "mcpstdio.watch"
	KindStdioOp    = "mcpstdio.op"
)

// watchMaxWait bounds one watch job (a worker ends it a minute past this,
// and the session sends the next one); opWait bounds the wait of an op
// for its worker.
const (
	watchMaxWait = time.Hour
	opWait       = 30 * time.Second
)

// StdioSpec is what a worker needs to run one stdio server; it goes with
// every request, so a worker that restarted, reaped the server or saw it
// crash starts it again. Env values are sealed for the worker
// (StdioEnvContext): the plane never carries them in the clear.
type StdioSpec struct {
	Server        uuid.UUID         `json:"server"`
	Name          string            `json:"name"`
	Version       int64             `json:"version"`
	Image         string            `json:"image"`
	Command       []string          `json:"command,omitempty"`
	AllowHosts    []string          `json:"allow_hosts,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	MaxConcurrent int               `json:"max_concurrent"`
}

// StdioEnvContext binds an environment value sealed for a worker to its
// tenant, server, version and name.
func StdioEnvContext(tenant, server uuid.UUID, version int64, name string) string {
	return "mcp_stdio_env:" + tenant.String() + ":" + server.String() + ":" + strconv.FormatInt(version, 10) + ":" + name
}

// stdioOp is a KindStdioOp payload.
type stdioOp struct {
	Spec StdioSpec       `json:"spec"`
	Op   string          `json:"op"` // tools or call
	Max  int             `json:"max,omitempty"`
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
}

// stdioAnswer is a worker's answer to an op.
type stdioAnswer struct {
	Tools      []upstreams.Tool `json:"tools,omitempty"`
	Content    json.RawMessage  `json:"content,omitempty"`
	Structured json.RawMessage  `json:"structured,omitempty"`
	IsError    bool             `json:"is_error,omitempty"`
}

// The watch's progress messages.
const (
	watchReady   = "ready"
	watchChanged = "tools_changed"
)

// StdioHost runs stdio servers on a worker (docker/mcpstdio). Every method
// names the tenant the plane request came from; a server is known by its
// tenant and id, so another tenant's request never reaches it. Env in the
// spec is open (the handlers opened it).
type StdioHost interface {
	// Start starts the server (or finds it running) and initializes its
	// session.
	Start(ctx context.Context, tenant uuid.UUID, spec StdioSpec) error
	// Watch calls changed on every tools/list_changed of the server, from
	// whichever of its containers, until ctx ends.
	Watch(ctx context.Context, tenant, server uuid.UUID, changed func())
	Tools(ctx context.Context, tenant uuid.UUID, spec StdioSpec, max int) ([]upstreams.Tool, error)
	Call(ctx context.Context, tenant uuid.UUID, spec StdioSpec, tool string, args json.RawMessage) (upstreams.Result, error)
}

// StdioHandlers are a worker's side of Stdio: they open the spec's
// environment with keys (bound to the request's tenant) and run the work
// on host.
func StdioHandlers(host StdioHost, keys *secrets.Keyring) map[string]plane.Handler {
	open := func(tenant uuid.UUID, spec *StdioSpec) error {
		if len(spec.Env) == 0 {
			return nil
		}
		if keys == nil {
			return fault.New(fault.Unavailable, "upstream server %s: this worker has no secret key to open its environment (VISOR_SECRET_KEYS)", spec.Name)
		}
		env := make(map[string]string, len(spec.Env))
		for k, v := range spec.Env {
			b, err := keys.Open(v, StdioEnvContext(tenant, spec.Server, spec.Version, k))
			if err != nil {
				return fault.Newf(fault.Unavailable, err, "upstream server %s: its environment value %s cannot be opened on this worker", spec.Name, k)
			}
			env[k] = string(b)
		}
		spec.Env = env
		return nil
	}
	return map[string]plane.Handler{
		KindStdioWatch: func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
			var spec StdioSpec
			if err := json.Unmarshal(j.Payload, &spec); err != nil {
				return nil, fault.New(fault.Invalid, "unreadable stdio watch")
			}
			if err := open(j.Tenant, &spec); err != nil {
				return nil, err
			}
			if err := host.Start(ctx, j.Tenant, spec); err != nil {
				return nil, err
			}
			var mu sync.Mutex
			n := 1.0
			j.Report(plane.Progress{Progress: n, Message: watchReady + " " + j.Worker})
			host.Watch(ctx, j.Tenant, spec.Server, func() {
				mu.Lock()
				n++
				p := plane.Progress{Progress: n, Message: watchChanged}
				mu.Unlock()
				j.Report(p)
			})
			return json.RawMessage(`{}`), nil
		},
		KindStdioOp: func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
			var op stdioOp
			if err := json.Unmarshal(j.Payload, &op); err != nil {
				return nil, fault.New(fault.Invalid, "unreadable stdio op")
			}
			if err := open(j.Tenant, &op.Spec); err != nil {
				return nil, err
			}
			var a stdioAnswer
			switch op.Op {
			case "tools":
				tools, err := host.Tools(ctx, j.Tenant, op.Spec, op.Max)
				if err != nil {
					return nil, err
				}
				a.Tools = tools
			case "call":
				res, err := host.Call(ctx, j.Tenant, op.Spec, op.Tool, op.Args)
				if err != nil {
					return nil, err
				}
				a.Content, a.Structured, a.IsError = res.Content, res.Structured, res.IsError
			default:
				return nil, fault.New(fault.Invalid, "unknown stdio op %q", op.Op)
			}
			return json.Marshal(a)
		},
	}
}

// Stdio reaches stdio servers over the worker plane: a session is a watch
// job on the worker that runs the server (its tools/list_changed come back
// as the watch's progress) and one op job per listing or call. It
// implements upstreams.Connector.
type Stdio struct {
	plane plane.Caller
	keys  *secrets.Keyring
}

var _ upstreams.Connector = (*Stdio)(nil)

// NewStdio returns a Stdio on the plane; keys seal environment values for
// the worker (nil: a server with environment values is unreachable).
func NewStdio(p plane.Caller, keys *secrets.Keyring) *Stdio { return &Stdio{plane: p, keys: keys} }

// Connect starts (or finds) the server on a worker and returns a session
// bound to that worker.
func (s *Stdio) Connect(ctx context.Context, t upstreams.Target) (upstreams.Session, error) {
	srv := t.Server
	if srv.Transport != upstreams.Stdio {
		return nil, fault.New(fault.Invalid, "%s is not the stdio transport", srv.Transport)
	}
	spec := StdioSpec{Server: srv.ID, Name: srv.Name, Version: srv.Version, Image: srv.Image, Command: srv.Command,
		AllowHosts: srv.AllowHosts, MaxConcurrent: srv.Limits.MaxConcurrent}
	if len(t.Env) > 0 {
		if s.keys == nil {
			return nil, fault.New(fault.Unavailable, "no secret key is configured to send the server's environment to a worker")
		}
		spec.Env = make(map[string]string, len(t.Env))
		for k, v := range t.Env {
			sealed, err := s.keys.Seal([]byte(v), StdioEnvContext(srv.TenantID, srv.ID, srv.Version, k))
			if err != nil {
				return nil, err
			}
			spec.Env[k] = sealed
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	sess := &StdioSession{plane: s.plane, tenant: srv.TenantID, spec: spec, changed: t.ToolsChanged, done: make(chan struct{})}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sess.cancel = cancel
	ready := make(chan error, 1)
	go sess.watch(sctx, raw, ready)
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if errors.Is(err, plane.ErrNoWorker) {
		err = fault.Newf(fault.Unavailable, err, "no stdio worker is running (a `visor worker` with VISOR_MCP_STDIO_WORKER=true)")
	}
	if err != nil {
		cancel()
		return nil, stdioError(err)
	}
	return sess, nil
}

// StdioSession is a session with a stdio server on one worker.
type StdioSession struct {
	plane   plane.Caller
	tenant  uuid.UUID
	spec    StdioSpec
	changed func()
	cancel  context.CancelFunc
	done    chan struct{} // closed when the watch ends for good

	mu     sync.Mutex
	worker string
	lost   error // why the session cannot be used any more
}

// watch runs the session's watch jobs: the first to the pool (it reports
// ready, naming its worker, on ready), the next ones, when one lapses, to
// that worker. It ends when the session closes or its worker is gone.
func (s *StdioSession) watch(ctx context.Context, raw json.RawMessage, ready chan<- error) {
	defer close(s.done)
	first := true
	for ctx.Err() == nil {
		req := plane.Request{Kind: KindStdioWatch, Tenant: s.tenant, Payload: raw, MaxWait: watchMaxWait}
		if first {
			req.Pool = StdioPool
		} else {
			req.Worker = s.Worker()
		}
		_, err := s.plane.Call(ctx, req, func(p plane.Progress) {
			worker, isReady := strings.CutPrefix(p.Message, watchReady+" ")
			switch {
			case first && isReady && worker != "":
				s.mu.Lock()
				s.worker = worker
				s.mu.Unlock()
				first = false
				ready <- nil
			case p.Message == watchChanged && s.changed != nil:
				s.changed()
			}
		})
		if first {
			if err == nil {
				err = errors.New("the worker ended the session before the server was ready")
			}
			ready <- err
			return
		}
		if err != nil && ctx.Err() == nil {
			// The worker is gone, or the server cannot be started again:
			// the session's calls fail and the service opens a new one.
			s.fail(err)
			return
		}
		// nil: the watch lapsed on its worker; the next one follows.
	}
}

func (s *StdioSession) fail(err error) {
	s.mu.Lock()
	if s.lost == nil {
		s.lost = err
	}
	s.mu.Unlock()
}

// Worker is the worker that runs the server for this session.
func (s *StdioSession) Worker() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worker
}

// Tools lists the server's tools, at most max.
func (s *StdioSession) Tools(ctx context.Context, max int) ([]upstreams.Tool, error) {
	a, err := s.op(ctx, stdioOp{Op: "tools", Max: max})
	if err != nil {
		return nil, err
	}
	return a.Tools, nil
}

// Call calls one tool.
func (s *StdioSession) Call(ctx context.Context, name string, args json.RawMessage) (upstreams.Result, error) {
	a, err := s.op(ctx, stdioOp{Op: "call", Tool: name, Args: args})
	if err != nil {
		return upstreams.Result{}, err
	}
	if a.Content == nil {
		a.Content = json.RawMessage(`[]`)
	}
	return upstreams.Result{Content: a.Content, Structured: a.Structured, IsError: a.IsError}, nil
}

func (s *StdioSession) op(ctx context.Context, op stdioOp) (stdioAnswer, error) {
	s.mu.Lock()
	worker, lost := s.worker, s.lost
	s.mu.Unlock()
	if lost != nil {
		return stdioAnswer{}, stdioError(lost)
	}
	op.Spec = s.spec
	raw, err := json.Marshal(op)
	if err != nil {
		return stdioAnswer{}, err
	}
	out, err := s.plane.Call(ctx, plane.Request{Kind: KindStdioOp, Worker: worker, Tenant: s.tenant, Payload: raw, MaxWait: opWait}, nil)
	if err != nil {
		if errors.Is(err, plane.ErrNoWorker) || errors.Is(err, plane.ErrWorkerLost) {
			s.fail(err)
		}
		return stdioAnswer{}, stdioError(err)
	}
	var a stdioAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return stdioAnswer{}, fault.New(fault.Unavailable, "the worker's answer is unreadable")
	}
	return a, nil
}

// Close ends the session's watch; the worker keeps the server warm until
// it is idle.
func (s *StdioSession) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// stdioError keeps a coded error's code (Invalid: the server refused the
// request) and makes any other Unavailable.
func stdioError(err error) error {
	if fault.CodeOf(err) != fault.Internal {
		return err
	}
	return fault.Newf(fault.Unavailable, err, "%s", err.Error())
}

// ConnectIO initializes an MCP client session over a server's standard
// input and output (r is its output, w its input); toolsChanged, when set,
// is called on each tools/list_changed. Closing the session closes w.
func ConnectIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser, version string, toolsChanged func()) (*Session, error) {
	opts := &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}
	if toolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *sdk.ToolListChangedRequest) { toolsChanged() }
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "visor", Version: version}, opts)
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: r, Writer: w, MaxLineLength: maxResponseBytes}, nil)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return &Session{cs: cs, cancel: func() {}}, nil
}
