// Package server builds Visor's one HTTP edge: a single echo instance with
// request ids, structured request logs, Prometheus metrics, optional OTel
// tracing, a body size limit, health and readiness endpoints, and a graceful
// shutdown. Each area (admin API, MCP, OAuth, dashboard) registers its own
// routes on Echo(); cmd/visor does the wiring.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Check is a named readiness probe: /readyz fails while any returns an error.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// Options configure a Server. Zero values get the documented defaults.
type Options struct {
	Addr string // listen address, ":8080" by default; port 0 picks a free one
	// AddrVar names the setting Addr came from, for error messages
	// ("VISOR_HTTP_ADDR" by default).
	AddrVar string
	Logger  *slog.Logger // required
	// Checks are run by /readyz (Postgres and Redis in production).
	Checks []Check
	// BodyLimit caps request bodies in bytes (1 MiB by default).
	BodyLimit int64
	// ShutdownTimeout bounds the graceful shutdown (30 s by default).
	ShutdownTimeout time.Duration
	// Registry receives the HTTP metrics and is served on /metrics. Nil
	// means a fresh registry with the Go and process collectors.
	Registry *prometheus.Registry
	// TracerProvider, when set, traces every request. Nil means no tracing.
	TracerProvider trace.TracerProvider
	// TrustedProxies are the networks whose X-Forwarded-For header is
	// believed when naming the client (rate limits, logs). Empty means the
	// peer address, always: a client cannot choose its own address.
	TrustedProxies []*net.IPNet
	// ErrorHandler renders errors returned by handlers; nil uses a plain
	// JSON {"error":{"code","message"}} renderer for echo.HTTPError only.
	ErrorHandler echo.HTTPErrorHandler
	// MaxConns caps the connections held open at once; those beyond it are
	// closed as soon as they are accepted. 0 is no cap.
	MaxConns int
	// H2C also serves HTTP/2 without TLS (prior knowledge, as a load
	// balancer speaking HTTP/2 to its backends sends it) beside HTTP/1.1,
	// up to H2CStreams requests at once on one connection. Over HTTP/2
	// many held streams share one connection and an idle stream costs its
	// handler's goroutine only.
	H2C bool
}

// H2CStreams is how many requests one HTTP/2 connection carries at once.
const H2CStreams = 1000

// Server is the HTTP edge. Create it with New, register routes on Echo(),
// then Listen and Serve.
type Server struct {
	e        *echo.Echo
	opts     Options
	reg      *prometheus.Registry
	ln       net.Listener
	draining atomic.Bool
	ownBody  map[string]bool          // routes whose handlers check their own bodies (ChecksOwnBody)
	parks    func(*http.Request) bool // requests that may park (ParkWhen)
}

// New returns a Server with its middleware and the /healthz, /readyz and
// /metrics routes installed.
func New(o Options) *Server {
	if o.Addr == "" {
		o.Addr = ":8080"
	}
	if o.AddrVar == "" {
		o.AddrVar = "VISOR_HTTP_ADDR"
	}
	if o.BodyLimit <= 0 {
		o.BodyLimit = 1 << 20
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	reg := o.Registry
	if reg == nil {
		reg = NewRegistry()
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(discard{})
	e.IPExtractor = echo.ExtractIPDirect()
	if len(o.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range o.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	}
	e.HTTPErrorHandler = o.ErrorHandler
	if e.HTTPErrorHandler == nil {
		e.HTTPErrorHandler = plainErrorHandler()
	}
	s := &Server{e: e, opts: o, reg: reg, ownBody: map[string]bool{}}
	s.middleware()
	s.routes()
	return s
}

// AddCheck adds a readiness probe, for areas built after the server (the
// MCP endpoint's stream count). Call it before Serve.
func (s *Server) AddCheck(c Check) { s.opts.Checks = append(s.opts.Checks, c) }

// Echo returns the echo instance to register routes on.
func (s *Server) Echo() *echo.Echo { return s.e }

// Registry returns the Prometheus registry served on /metrics, for areas
// that add their own metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// OnShutdown registers fn to run when a graceful shutdown begins, so
// long-lived streams can be told to finish.
func (s *Server) OnShutdown(fn func()) { s.e.Server.RegisterOnShutdown(fn) }

// Listen binds the listen address. A port in use is reported in one line
// that names the address.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("cannot listen on %s: the address is already in use; stop the other process or set %s to a free address", s.opts.Addr, s.opts.AddrVar)
		}
		return fmt.Errorf("cannot listen on %s: %v; set %s to an address like :8080", s.opts.Addr, unwrapOp(err), s.opts.AddrVar)
	}
	if s.opts.MaxConns > 0 {
		ln = newCapListener(ln, s.opts.MaxConns, s.reg)
	}
	s.ln = ln
	return nil
}

// Close releases the listener of a server that will not Serve (a start-up
// step after Listen failed). After Serve it is a no-op.
func (s *Server) Close() {
	if s.ln != nil {
		_ = s.ln.Close()
	}
}

// Addr returns the bound address; Listen must have succeeded.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves on the bound listener until ctx ends, then shuts down
// gracefully: /readyz starts failing, new connections are refused, and
// in-flight requests get up to ShutdownTimeout to finish.
func (s *Server) Serve(ctx context.Context) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.e.Server.ReadHeaderTimeout = 10 * time.Second
	s.e.Server.IdleTimeout = 2 * time.Minute
	if s.opts.H2C {
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		s.e.Server.Protocols = &p
		s.e.Server.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: H2CStreams}
	}
	s.e.Server.Handler = s
	s.e.Server.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	errc := make(chan error, 1)
	go func() { errc <- s.e.Server.Serve(s.ln) }()
	s.opts.Logger.Info("http server listening", "addr", s.ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.opts.Logger.Info("http server shutting down", "timeout", s.opts.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	if err := s.e.Server.Shutdown(sctx); err != nil {
		_ = s.e.Server.Close()
		return fmt.Errorf("graceful shutdown did not finish in %s: %w", s.opts.ShutdownTimeout, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	s.opts.Logger.Info("http server stopped")
	return nil
}

func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
