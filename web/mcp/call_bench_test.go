package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/tools"
)

// BenchmarkCall calls a trivial read-only tool at 1, 8 and 16 concurrent
// clients in both eras (2026-07-28 stateless; 2025-11-25 in one session),
// against the full endpoint — HTTP, auth with a real agent key, the policy,
// a durable audit row on real Postgres — and a bare go-sdk server holding
// the same tools (stateless for 2026-07-28, one session for 2025-11-25), in
// the same run so that the ratios hold on a loaded machine. Each pair logs
// full ÷ bare throughput and the p50 difference.
//
//	go test ./web/mcp -run '^$' -bench '^BenchmarkCall$' -benchtime 1000x
func BenchmarkCall(b *testing.B) {
	full, token, _, reg := fullStack(b)
	bare, bareSessions := bareServers(b, reg)
	modern := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_echo","arguments":{"text":"hi"},` + modernMeta + `}}`
	legacy := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_echo","arguments":{"text":"hi"}}}`
	const version = "2025-11-25"
	fullHdr := map[string]string{"Mcp-Protocol-Version": version, "Mcp-Session-Id": benchSession(b, full, token, version)}
	bareHdr := map[string]string{"Mcp-Protocol-Version": version, "Mcp-Session-Id": benchSession(b, bareSessions, "", version)}
	for _, workers := range []int{1, 8, 16} {
		for _, era := range []struct {
			name               string
			body               string
			bareURL            string
			bareHdr, fullHdr   map[string]string
			bareToken, fullTok string
		}{
			{"modern", modern, bare, modernHeaders("tools/call", "bench_echo"), modernHeaders("tools/call", "bench_echo"), "", token},
			{"legacy", legacy, bareSessions, bareHdr, fullHdr, "", token},
		} {
			var st [2]loadStats
			b.Run(fmt.Sprintf("%s/c%d/bare", era.name, workers), func(b *testing.B) {
				st[0] = loadWith(b, workers, era.bareURL, era.bareToken, era.bareHdr, era.body)
			})
			b.Run(fmt.Sprintf("%s/c%d/full", era.name, workers), func(b *testing.B) {
				st[1] = loadWith(b, workers, full, era.fullTok, era.fullHdr, era.body)
			})
			if st[0].rps > 0 && st[1].rps > 0 {
				b.Logf("%s c%d: full ÷ bare throughput %.2f×; p50 full − bare %+.2f ms (bare %.2f ms, full %.2f ms)",
					era.name, workers, st[1].rps/st[0].rps, float64(st[1].p50-st[0].p50)/1e6,
					float64(st[0].p50)/1e6, float64(st[1].p50)/1e6)
			}
		}
	}
}

// bareServers serves reg's tool names and schemas from one plain go-sdk
// server — no auth, no policy, no audit — stateless (the 2026-07-28 way)
// and with sessions (the earlier eras' way). Its tools answer like
// benchEcho.
func bareServers(b *testing.B, reg *tools.Registry) (stateless, sessions string) {
	s := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil)
	for _, t := range reg.All() {
		s.AddTool(&sdk.Tool{Name: t.Name, Description: reg.ListedDescription(t), InputSchema: reg.InputSchema(t)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}}, nil
			})
	}
	get := func(*http.Request) *sdk.Server { return s }
	a := httptest.NewServer(sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true}))
	b.Cleanup(a.Close)
	c := httptest.NewServer(sdk.NewStreamableHTTPHandler(get, nil))
	b.Cleanup(c.Close)
	return a.URL, c.URL
}
