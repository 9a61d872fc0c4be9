package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// collector is a fake OTLP/HTTP trace receiver.
type collector struct {
	mu    sync.Mutex
	names map[string]bool
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad export", 400)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.names[ss.Scope.GetName()+" "+sp.Name] = true
			}
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (c *collector) has(scope, span string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range c.names {
		if strings.Contains(n, scope) && strings.Contains(n, span) {
			return true
		}
	}
	return false
}

// TestTracesAreExportedOverOTLPWhenConfigured: with
// OTEL_EXPORTER_OTLP_ENDPOINT set, serve exports HTTP, pgx and Redis spans
// to it, flushed at shutdown.
func TestTracesAreExportedOverOTLPWhenConfigured(t *testing.T) {
	t.Parallel()
	needRedis(t)
	col := &collector{names: map[string]bool{}}
	srv := httptest.NewServer(col)
	defer srv.Close()

	r := startCmd(t, testEnv(t, pgtest.NewURL(t), "OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL), "serve")
	code, _ := httpGet(t, r.base+"/api/v1/tenants/nobody/agents", "vsk_x")
	require.Equal(t, 404, code)
	code, _ = httpGet(t, r.base+"/readyz", "")
	require.Equal(t, 200, code)
	require.NoError(t, r.stop())

	require.Eventually(t, func() bool { return col.has("otelecho", "/api/v1/tenants/:tenant/agents") }, 5*time.Second, 50*time.Millisecond)
	require.True(t, col.has("otelpgx", ""), "pgx spans: %v", col.names)
	require.True(t, col.has("redisotel", "ping"), "redis spans: %v", col.names)
}

// TestNoOTLPEndpointNoExport: without the variable nothing is exported
// (the provider is nil, so no exporter is even built).
func TestNoOTLPEndpointNoExport(t *testing.T) {
	t.Parallel()
	tp, flush, err := newTracerProvider(t.Context(), Config{}, "serve")
	require.NoError(t, err)
	require.Nil(t, tp)
	require.NoError(t, flush(t.Context()))
}
