package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/web/server"
)

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// observed is the fixture's endpoint behind the real HTTP edge (request
// log, metrics registry), with its own registry of tools, one of which
// refuses every call itself.
func observed(t *testing.T, opts Options) (*fixture, string, *logBuffer) {
	t.Helper()
	f := newFixture(t)
	reg := tools.NewRegistry()
	reg.Register(tools.Tool{Name: "agent_status", Description: "Read status.", Scope: identity.ScopeToolsRead, Handler: echoTool,
		Params: []tools.Param{{Name: "text", Type: "string", Description: "Text."}}})
	reg.Register(tools.Tool{Name: "plain_write", Description: "Write.", Scope: identity.ScopeToolsWrite, Handler: echoTool,
		Params: []tools.Param{{Name: "text", Type: "string", Description: "Text.", Required: true}}})
	reg.Register(tools.Tool{Name: "refuse_me", Description: "Refuses.", Scope: identity.ScopeToolsRead,
		Handler: func(context.Context, tools.Call) (*tools.Result, error) {
			return nil, tools.Refused(tools.EventRelationshipRefused, "not yours")
		}})
	logs := &logBuffer{}
	prom := prometheus.NewRegistry()
	s := server.New(server.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Registry: prom})
	opts.Metrics = NewMetrics(prom)
	ep := New(reg, tools.NewSubjects(f.dir, tools.NoGrants{}, 0), f.audit, f.hub, opts)
	ep.Register(s.Echo(), func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := f.tokens[strings.TrimPrefix(c.Request().Header.Get("Authorization"), "Bearer ")]
			if !ok {
				return c.NoContent(http.StatusUnauthorized)
			}
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), p)))
			return next(c)
		}
	})
	srv := httptest.NewServer(s.Echo())
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/t/acme/mcp"
	return f, srv.URL + "/metrics", logs
}

func callBody(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`, id, modernMeta, name, args)
}

// TestToolMetricsAndLogLine: every tools/call is counted by tool and
// outcome, refusals by event, with a latency histogram; a name the
// registry does not know is "unknown", never the caller's string; and the
// request's log line names the tool and the outcome.
func TestToolMetricsAndLogLine(t *testing.T) {
	t.Parallel()
	f, metricsURL, logs := observed(t, Options{Version: "v1.2.3-test"})
	modern := func(token, name, args string) reply {
		return f.rpc(t, token, modernHeaders("tools/call", name), callBody(1, name, args))
	}
	require.Equal(t, "echo: hi", modern("emp", "agent_status", `{"text":"hi"}`).result(t)["content"].([]any)[0].(map[string]any)["text"])
	modern("emp", "agent_status", `{}`)
	modern("emp", "no_such_tool_x1", `{}`).rpcErr(t)
	modern("emp", "refuse_me", `{}`).refusal(t)
	require.Equal(t, true, modern("emp", "plain_write", `{}`).result(t)["isError"])
	require.Equal(t, http.StatusForbidden, modern("ext-read", "plain_write", `{"text":"x"}`).status, "step-up")
	// A legacy session's calls are counted the same way.
	id := f.session(t, "emp", "2025-06-18")
	f.rpc(t, "emp", map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18"},
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"agent_status","arguments":{}}}`).result(t)

	metrics := scrape(t, metricsURL)
	for series, want := range map[string]string{
		`visor_mcp_tool_calls_total{outcome="ok",tool="agent_status"}`:                     "3",
		`visor_mcp_tool_calls_total{outcome="refused",tool="unknown"}`:                     "1",
		`visor_mcp_tool_calls_total{outcome="refused",tool="refuse_me"}`:                   "1",
		`visor_mcp_tool_calls_total{outcome="tool_error",tool="plain_write"}`:              "1",
		`visor_mcp_tool_calls_total{outcome="refused",tool="plain_write"}`:                 "1",
		`visor_mcp_tool_refusals_total{event="unknown_tool",tool="unknown"}`:               "1",
		`visor_mcp_tool_refusals_total{event="relationship_refused",tool="refuse_me"}`:     "1",
		`visor_mcp_tool_refusals_total{event="scope_denied",tool="plain_write"}`:           "1",
		`visor_mcp_tool_call_duration_seconds_count{outcome="ok",tool="agent_status"}`:     "3",
		`visor_mcp_tool_call_duration_seconds_count{outcome="refused",tool="plain_write"}`: "1",
	} {
		require.Equal(t, want, metrics[series], series)
	}
	require.NotContains(t, fmt.Sprint(metrics), "no_such_tool", "a caller's tool name never becomes a label")

	require.Len(t, logs.lines("tool=agent_status outcome=ok"), 3, "%v", logs.lines("http request"))
	require.Len(t, logs.lines("tool=unknown outcome=refused event=unknown_tool"), 1)
	require.Len(t, logs.lines("tool=refuse_me outcome=refused event=relationship_refused"), 1)
	require.Len(t, logs.lines("tool=plain_write outcome=tool_error"), 1)
	require.Len(t, logs.lines("tool=plain_write outcome=refused event=scope_denied"), 1)
	require.Empty(t, logs.lines("no_such_tool"))
}

// scrape reads the /metrics page into series → value.
func scrape(t *testing.T, u string) map[string]string {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
			out[line[:i]] = line[i+1:]
		}
	}
	return out
}

// TestServerInfoVersion: initialize names the build's version.
func TestServerInfoVersion(t *testing.T) {
	t.Parallel()
	f, _, _ := observed(t, Options{Version: "v1.2.3-test"})
	r := f.rpc(t, "emp", nil, fmt.Sprintf(initBody, "2025-06-18"))
	info := r.result(t)["serverInfo"].(map[string]any)
	require.Equal(t, "visor", info["name"])
	require.Equal(t, "v1.2.3-test", info["version"])
}
