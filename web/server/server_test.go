package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/server"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	srv  *server.Server
	base string
	logs *syncBuffer
	stop func() error
}

func start(t *testing.T, o server.Options, routes func(e *echo.Echo)) *fixture {
	t.Helper()
	logs := &syncBuffer{}
	o.Addr = "127.0.0.1:0"
	o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	s := server.New(o)
	if routes != nil {
		routes(s.Echo())
	}
	f := serve(t, s)
	f.logs = logs
	return f
}

// serve listens and serves s until the test ends.
func serve(t *testing.T, s *server.Server) *fixture {
	t.Helper()
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	var once sync.Once
	var serr error
	stop := func() error {
		once.Do(func() { cancel(); serr = <-done })
		return serr
	}
	t.Cleanup(func() { _ = stop() })
	return &fixture{srv: s, base: "http://" + s.Addr().String(), stop: stop}
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	var redisDown bool
	var mu sync.Mutex
	f := start(t, server.Options{Checks: []server.Check{
		{Name: "postgres", Fn: func(context.Context) error { return nil }},
		{Name: "redis", Fn: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if redisDown {
				return errors.New("connection refused")
			}
			return nil
		}},
	}}, nil)

	res, body := get(t, f.base+"/healthz")
	require.Equal(t, 200, res.StatusCode)
	require.JSONEq(t, `{"status":"ok"}`, body)

	res, body = get(t, f.base+"/readyz")
	require.Equal(t, 200, res.StatusCode)
	require.JSONEq(t, `{"status":"ok","checks":{"postgres":"ok","redis":"ok"}}`, body)

	mu.Lock()
	redisDown = true
	mu.Unlock()
	res, body = get(t, f.base+"/readyz")
	require.Equal(t, 503, res.StatusCode)
	require.JSONEq(t, `{"status":"unavailable","checks":{"postgres":"ok","redis":"unavailable"}}`, body)
	// Liveness does not depend on Redis.
	res, _ = get(t, f.base+"/healthz")
	require.Equal(t, 200, res.StatusCode)
}

func TestRequestLogCarriesRequestIDTenantAndPrincipal(t *testing.T) {
	t.Parallel()
	agent := uuid.New()
	f := start(t, server.Options{}, func(e *echo.Echo) {
		// Stands in for the auth middleware: it resolves the principal
		// inside the logging middleware.
		e.GET("/t/:tenant/whoami", func(c echo.Context) error {
			p := identity.Principal{TenantSlug: c.Param("tenant"), Kind: identity.KindEmployee, AgentID: agent}
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), p)))
			return c.String(200, server.RequestIDFrom(c.Request().Context()))
		})
	})

	res, body := get(t, f.base+"/t/acme/whoami", "Authorization", "Bearer vsk_secret-must-not-be-logged", server.HeaderRequestID, "req-123")
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "req-123", res.Header.Get(server.HeaderRequestID))
	require.Equal(t, "req-123", body)

	line := findLog(t, f.logs.String(), "/t/:tenant/whoami")
	require.Equal(t, "req-123", line["request_id"])
	require.Equal(t, "acme", line["tenant"])
	require.Equal(t, "agent:"+agent.String(), line["principal"])
	require.Equal(t, "employee", line["principal_kind"])
	require.EqualValues(t, 200, line["status"])
	require.NotContains(t, f.logs.String(), "vsk_secret")

	// A malformed incoming id is replaced, not echoed into logs.
	res, _ = get(t, f.base+"/t/acme/whoami", server.HeaderRequestID, "bad id\" with spaces")
	require.Regexp(t, `^[0-9a-f]{24}$`, res.Header.Get(server.HeaderRequestID))
}

func findLog(t *testing.T, logs, route string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if m["msg"] == "http request" && m["route"] == route {
			return m
		}
	}
	t.Fatalf("no request log for %s in:\n%s", route, logs)
	return nil
}

func TestMetricsCountRequestsByRoute(t *testing.T) {
	t.Parallel()
	f := start(t, server.Options{}, func(e *echo.Echo) {
		e.GET("/t/:tenant/x", func(c echo.Context) error { return c.NoContent(204) })
	})
	for range 3 {
		get(t, f.base+"/t/a/x")
	}
	res, body := get(t, f.base+"/metrics")
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, body, `visor_http_requests_total{code="204",method="GET",route="/t/:tenant/x"} 3`)
	require.Contains(t, body, `visor_http_request_duration_seconds_bucket`)
	require.Contains(t, body, `go_goroutines`)
}

func TestBodyLimitAndPanicsAreJSONErrors(t *testing.T) {
	t.Parallel()
	f := start(t, server.Options{BodyLimit: 16}, func(e *echo.Echo) {
		e.POST("/echo", func(c echo.Context) error {
			b, err := io.ReadAll(c.Request().Body)
			if err != nil {
				return err
			}
			return c.Blob(200, "text/plain", b)
		})
		e.GET("/boom", func(c echo.Context) error { panic("kaboom") })
	})
	res, err := http.Post(f.base+"/echo", "text/plain", strings.NewReader("short"))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)

	res, err = http.Post(f.base+"/echo", "text/plain", strings.NewReader(strings.Repeat("x", 100)))
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 413, res.StatusCode)
	require.Contains(t, string(b), `"error"`)

	r, body := get(t, f.base+"/boom")
	require.Equal(t, 500, r.StatusCode)
	require.JSONEq(t, `{"error":{"code":"internal","message":"internal error"}}`, body)
	require.Contains(t, f.logs.String(), "kaboom")

	r, body = get(t, f.base+"/nope")
	require.Equal(t, 404, r.StatusCode)
	require.JSONEq(t, `{"error":{"code":"not_found","message":"Not Found"}}`, body)
}

func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	f := start(t, server.Options{ShutdownTimeout: 10 * time.Second}, func(e *echo.Echo) {
		e.GET("/slow", func(c echo.Context) error {
			close(entered)
			<-release
			return c.String(200, "done")
		})
	})
	type result struct {
		code int
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		res, err := http.Get(f.base + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- result{code: res.StatusCode, body: string(b)}
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- f.stop() }()

	// While draining, new connections are refused.
	require.Eventually(t, func() bool {
		_, err := http.Get(f.base + "/healthz")
		return err != nil
	}, 5*time.Second, 20*time.Millisecond)
	select {
	case <-stopped:
		t.Fatal("server stopped before the in-flight request finished")
	default:
	}
	close(release)
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, 200, r.code)
	require.Equal(t, "done", r.body)
	require.NoError(t, <-stopped)
}

func TestPortInUseIsOneClearLine(t *testing.T) {
	t.Parallel()
	f := start(t, server.Options{}, nil)
	s := server.New(server.Options{Addr: f.srv.Addr().String(), Logger: slog.New(slog.DiscardHandler)})
	err := s.Listen()
	require.ErrorContains(t, err, "already in use")
	require.ErrorContains(t, err, "VISOR_HTTP_ADDR")
	require.NotContains(t, err.Error(), "\n")
}

func TestTracingRecordsHTTPSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := start(t, server.Options{TracerProvider: tp}, func(e *echo.Echo) {
		e.GET("/t/:tenant/traced", func(c echo.Context) error { return c.NoContent(204) })
	})
	get(t, f.base+"/t/acme/traced", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	get(t, f.base+"/healthz")
	spans := rec.Ended()
	require.Len(t, spans, 1, "probes are not traced")
	require.Equal(t, "GET /t/:tenant/traced", spans[0].Name())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", spans[0].SpanContext().TraceID().String(), "incoming trace context is continued")
}

// TestInternalErrorsAreLoggedOnceNeverSent: the detail of a 500 goes to the
// request log line at error level, and the caller sees a generic message.
func TestInternalErrorsAreLoggedOnceNeverSent(t *testing.T) {
	t.Parallel()
	f := start(t, server.Options{}, func(e *echo.Echo) {
		e.GET("/fail", func(c echo.Context) error { return errors.New("db exploded at 10.0.0.7") })
	})
	res, body := get(t, f.base+"/fail")
	require.Equal(t, 500, res.StatusCode)
	require.NotContains(t, body, "exploded")
	line := findLog(t, f.logs.String(), "/fail")
	require.Equal(t, "ERROR", line["level"])
	require.Contains(t, line["err"], "db exploded")
	require.Equal(t, 1, strings.Count(f.logs.String(), "db exploded"), "logged once")
}

// TestH2CServesBothProtocols: with H2C a replica answers HTTP/2 without
// TLS (prior knowledge) and HTTP/1.1 on the same port, and many HTTP/2
// requests held open at once share one connection.
func TestH2CServesBothProtocols(t *testing.T) {
	t.Parallel()
	const held = 20
	arrived := make(chan struct{}, held)
	release := make(chan struct{})
	f := start(t, server.Options{H2C: true}, func(e *echo.Echo) {
		e.GET("/proto", func(c echo.Context) error { return c.String(http.StatusOK, c.Request().Proto) })
		e.GET("/hold", func(c echo.Context) error {
			arrived <- struct{}{}
			<-release
			return c.String(http.StatusOK, c.Request().Proto)
		})
	})
	res, body := get(t, f.base+"/proto")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "HTTP/1.1", body, "HTTP/1.1 is still served")

	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	var dials atomic.Int32
	tr := &http.Transport{Protocols: &p, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	h2 := &http.Client{Transport: tr}
	res, err := h2.Get(f.base + "/proto")
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, "HTTP/2.0", string(b), "HTTP/2 without TLS is served")
	var wg sync.WaitGroup
	for range held {
		wg.Go(func() {
			res, err := h2.Get(f.base + "/hold")
			if !assert.NoError(t, err) {
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			assert.Equal(t, "HTTP/2.0", string(b))
		})
	}
	for range held {
		<-arrived
	}
	close(release)
	wg.Wait()
	require.EqualValues(t, 1, dials.Load(), "the held HTTP/2 requests share one connection")
}
