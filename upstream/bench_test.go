package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
)

// quantiles reports the p50 and p99 of ds as benchmark metrics.
func quantiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	q := func(p float64) float64 { return float64(ds[int(float64(len(ds)-1)*p)].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkCallOverhead calls the same loopback Go SDK server's echo tool
// directly with an SDK client, through the service (policy, schema check,
// limits, fence) and through mcp_tool_call in the call pipeline (with its
// audit rows, pending then complete, in Postgres), one call at a time.
func BenchmarkCallOverhead(b *testing.B) {
	f, h := newFixture(b), newHarness(b)
	ctx := context.Background()
	h.add(b, h.a, "fixture", f.http.URL+"/mcp", nil)
	args := map[string]any{"text": "hello"}

	b.Run("direct", func(b *testing.B) {
		c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: f.http.URL + "/mcp"}, nil)
		require.NoError(b, err)
		defer cs.Close()
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
			ds = append(ds, time.Since(start))
			require.NoError(b, err)
		}
		quantiles(b, ds)
	})
	sub := h.employee(b, h.a, h.agentA, nil)
	b.Run("service", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			_, err := h.svc.Call(ctx, sub, "fixture:echo", args)
			ds = append(ds, time.Since(start))
			require.NoError(b, err)
		}
		quantiles(b, ds)
	})
	b.Run("mcp_tool_call", func(b *testing.B) {
		log := postgres.NewAuditLog(h.db, 4, slog.New(slog.DiscardHandler))
		require.NoError(b, log.Start(ctx))
		defer log.Stop()
		pipe := calls.New(h.reg, tools.NewSubjects(h.istore, tools.NoGrants{}, time.Second), log, nil)
		who := identity.Principal{TenantID: h.a.ID, Kind: identity.KindEmployee, AgentID: h.agentA.ID, Scopes: []string{identity.ScopeToolsAdmin}}
		raw, _ := json.Marshal(map[string]any{"name": "fixture:echo", "arguments": args})
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			a := pipe.Call(ctx, who, "mcp_tool_call", raw, nil)
			ds = append(ds, time.Since(start))
			require.NotNil(b, a.Result, a.ToolError+a.Failure)
		}
		quantiles(b, ds)
	})
}

// BenchmarkSearch1000 searches a tenant's catalog of 1,000 upstream tools
// (one server) as an AI employee whose denied_tools the policy applies
// to each tool.
func BenchmarkSearch1000(b *testing.B) {
	s := sdk.NewServer(&sdk.Implementation{Name: "many", Version: "1"}, nil)
	words := []string{"invoice", "payment", "customer", "order", "shipment", "refund", "report", "ticket", "請求書", "在庫"}
	for i := range 1000 {
		s.AddTool(&sdk.Tool{Name: fmt.Sprintf("tool_%04d", i),
			Description: fmt.Sprintf("Handle the %s and %s of account %d.", words[i%10], words[(i/10)%10], i),
			InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer srv.Close()
	h := newHarness(b)
	h.add(b, h.a, "many", srv.URL+"/mcp", nil)
	sub := h.employee(b, h.a, h.agentA, func(c *identity.Capabilities) { c.DeniedTools = []string{"mcp__many__tool_00*"} })
	ctx := context.Background()
	for _, q := range []string{"refund payment", "請求書 在庫", ""} {
		b.Run(fmt.Sprintf("query=%q", q), func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				hits, _, err := h.svc.Search(ctx, sub, "", q, 10)
				ds = append(ds, time.Since(start))
				require.NoError(b, err)
				require.Len(b, hits, 10)
			}
			quantiles(b, ds)
		})
	}
}
