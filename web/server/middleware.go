package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/propagation"

	"github.com/visorhq/visor/services/identity"
)

func (s *Server) middleware() {
	s.e.Use(requestID)
	if s.opts.TracerProvider != nil {
		s.e.Use(otelecho.Middleware("visor",
			otelecho.WithTracerProvider(s.opts.TracerProvider),
			otelecho.WithPropagators(propagation.TraceContext{}),
			otelecho.WithSkipper(func(c echo.Context) bool { return isProbe(c.Path()) })))
	}
	s.e.Use(s.observe(newHTTPMetrics(s.reg)))
	s.e.Use(s.recoverPanic)
	s.e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: strconv.FormatInt(s.opts.BodyLimit, 10) + "B"}))
	s.e.Use(s.validInput)
}

type requestIDKey struct{}

// RequestIDFrom returns the request id of ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// HeaderRequestID carries the request id in both directions.
const HeaderRequestID = echo.HeaderXRequestID

var goodRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID keeps a well-formed incoming X-Request-Id (so a proxy's id
// follows the request) and otherwise makes one up.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(HeaderRequestID)
		if !goodRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Response().Header().Set(HeaderRequestID, id)
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), requestIDKey{}, id)))
		return next(c)
	}
}

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "visor_http_requests_total", Help: "HTTP requests by method, route and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "visor_http_request_duration_seconds", Help: "HTTP request latency by method and route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// observe logs one line per request and records its metrics. The tenant and
// principal are read after the handler ran, because the auth middleware
// inside this one is what resolves them.
func (s *Server) observe(m *httpMetrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			notes := &annotations{}
			c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), annotationsKey{}, notes)))
			err := next(c)
			if err != nil {
				c.Error(err) // render now, so the status below is the one sent
			}
			req, res := c.Request(), c.Response()
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			// echo reuses c once the chain returns, and a parked request
			// (Park) is recorded when its wait ends: what the line needs is
			// read now (the bytes are those written before it parked).
			status := res.Status
			var attrs []slog.Attr
			if !isProbe(route) || err != nil {
				attrs = []slog.Attr{
					slog.String("request_id", RequestIDFrom(req.Context())),
					slog.String("method", req.Method), slog.String("route", route),
					slog.String("path", req.URL.Path), slog.Int("status", status),
					slog.Int64("bytes", res.Size), {},
				}
				attrs = append(attrs, principalAttrs(c)...)
				if err != nil {
					attrs = append(attrs, slog.String("err", err.Error()))
				}
			}
			method, ctx := req.Method, req.Context()
			record := func() {
				m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
				m.duration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
				if attrs == nil {
					return
				}
				attrs[6] = slog.Duration("duration", time.Since(start))
				attrs = append(attrs, notes.all()...)
				level := slog.LevelInfo
				if status >= 500 {
					level = slog.LevelError
				}
				s.opts.Logger.LogAttrs(ctx, level, "http request", attrs...)
			}
			if !afterPark(req.Context(), record) {
				record()
			}
			return nil
		}
	}
}

// principalAttrs names the tenant and principal of the request, when the
// auth middleware resolved them. Credentials are never logged.
func principalAttrs(c echo.Context) []slog.Attr {
	p, ok := identity.PrincipalFrom(c.Request().Context())
	if !ok {
		if t := c.Param("tenant"); t != "" {
			return []slog.Attr{slog.String("tenant", t)}
		}
		return nil
	}
	tenant := p.TenantSlug
	if tenant == "" {
		tenant = p.TenantID.String()
	}
	return []slog.Attr{slog.String("tenant", tenant), slog.String("principal", p.ID()), slog.String("principal_kind", string(p.Kind))}
}

func isProbe(route string) bool {
	return route == "/healthz" || route == "/readyz" || route == "/metrics"
}

// recoverPanic turns a handler panic into a 500 and one log line with the
// stack, instead of a dead connection.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil || r == http.ErrAbortHandler {
				if r != nil {
					panic(r)
				}
				return
			}
			buf := make([]byte, 8<<10)
			buf = buf[:runtime.Stack(buf, false)]
			s.opts.Logger.ErrorContext(c.Request().Context(), "handler panic",
				"request_id", RequestIDFrom(c.Request().Context()), "panic", fmt.Sprint(r), "stack", string(buf))
			err = echo.NewHTTPError(http.StatusInternalServerError, "internal error")
		}()
		return next(c)
	}
}

// plainErrorHandler renders echo's own errors (404, 405, 413) in the JSON
// error shape; any other error is a 500 whose detail only the request log
// line carries. cmd/visor replaces it with the admin API's handler, which
// also knows fault codes.
func plainErrorHandler() echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		code, msg := http.StatusInternalServerError, "internal error"
		if he, ok := err.(*echo.HTTPError); ok && he.Code < 500 {
			code, msg = he.Code, http.StatusText(he.Code)
		}
		_ = c.JSON(code, map[string]any{"error": map[string]string{"code": statusCode(code), "message": msg}})
	}
}

func statusCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusUnauthorized:
		return "unauthenticated"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusTooManyRequests:
		return "rate_limited"
	}
	if status < 500 {
		return "invalid_argument"
	}
	return "internal"
}
