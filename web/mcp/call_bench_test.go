package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/tools"
)

// BenchmarkCall calls a trivial read-only tool at 1, 8 and 16 concurrent
// clients in both eras (2026-07-28 stateless; 2025-11-25 in one session),
// against the full endpoint — HTTP, auth with a real agent key, the policy,
// a durable audit row on real Postgres — and a bare go-sdk server holding
// the same tools, in the same run so that the ratios hold on a loaded
// machine. The bare server is stateless for 2026-07-28; for 2025-11-25 it
// is measured both with one session (bare) and stateless (bare-stateless,
// a new server session per request, as BenchmarkListCatalog's bare
// server). Each pair logs full ÷ bare throughput and the p50 difference.
//
//	go test ./web/mcp -run '^$' -bench '^BenchmarkCall$' -benchtime 1000x -v
func BenchmarkCall(b *testing.B) {
	cb := callServers(b)
	type server struct {
		name, url, token string
		hdr              map[string]string
	}
	for _, workers := range []int{1, 8, 16} {
		for _, era := range []struct {
			name  string
			body  string
			bares []server
			full  server
		}{
			{"modern", cb.modern, []server{{"bare", cb.bare, "", modernHeaders("tools/call", "bench_echo")}},
				server{"full", cb.full, cb.token, modernHeaders("tools/call", "bench_echo")}},
			{"legacy", cb.legacy, []server{{"bare", cb.bareSessions, "", cb.bareHdr}, {"bare-stateless", cb.bare, "", map[string]string{"Mcp-Protocol-Version": legacyVersion}}},
				server{"full", cb.full, cb.token, cb.fullHdr}},
		} {
			st := map[string]loadStats{}
			for _, s := range append(era.bares, era.full) {
				b.Run(fmt.Sprintf("%s/c%d/%s", era.name, workers, s.name), func(b *testing.B) {
					st[s.name] = loadWith(b, workers, s.url, s.token, s.hdr, era.body)
				})
			}
			f := st["full"]
			for _, s := range era.bares {
				if bs := st[s.name]; bs.rps > 0 && f.rps > 0 {
					logRatio(b, era.name, workers, s.name, bs, f)
				}
			}
		}
	}
}

// legacyVersion is the session era the call benchmarks measure.
const legacyVersion = "2025-11-25"

// callBench is what the call benchmarks compare: the full endpoint and the
// bare servers, the agent's token, the request bodies of both eras, and
// the headers of a 2025-11-25 session opened on the full endpoint and on
// the bare session server.
type callBench struct {
	full, token, bare, bareSessions string
	modern, legacy                  string
	fullHdr, bareHdr                map[string]string
}

// callServers starts the servers of the call benchmarks and opens their
// sessions.
func callServers(b *testing.B) callBench {
	full, token, _, reg := fullStack(b)
	bare, bareSessions := bareServers(b, reg)
	return callBench{
		full: full, token: token, bare: bare, bareSessions: bareSessions,
		modern:  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_echo","arguments":{"text":"hi"},` + modernMeta + `}}`,
		legacy:  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_echo","arguments":{"text":"hi"}}}`,
		fullHdr: map[string]string{"Mcp-Protocol-Version": legacyVersion, "Mcp-Session-Id": benchSession(b, full, token, legacyVersion)},
		bareHdr: map[string]string{"Mcp-Protocol-Version": legacyVersion, "Mcp-Session-Id": benchSession(b, bareSessions, "", legacyVersion)},
	}
}

// logRatio logs full ÷ bare throughput and the p50 difference of one case.
func logRatio(b *testing.B, name string, workers int, bareName string, bs, fs loadStats) {
	b.Logf("%s c%d: full ÷ %s throughput %.2f×; p50 full − %s %+.2f ms (%s %.2f ms, full %.2f ms)",
		name, workers, bareName, fs.rps/bs.rps, bareName, float64(fs.p50-bs.p50)/1e6, bareName,
		float64(bs.p50)/1e6, float64(fs.p50)/1e6)
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

// BenchmarkCallAlternating is BenchmarkCall's comparison at 8 and 16
// clients with the machine's drift spread over both sides: the bare server
// and the full endpoint take turns, in 20 slices each of b.N/20 calls (at
// least one per client; bare first in even slices, full first in odd
// ones), so that a change in the machine's load during the run falls on
// both alike rather than on whichever ran second. Throughput is each
// server's calls over its own slices' wall time; p50 is over all its
// calls. Each case reports the ratio as full/bare.
//
//	go test ./web/mcp -run '^$' -bench '^BenchmarkCallAlternating$' -benchtime 20000x -v
func BenchmarkCallAlternating(b *testing.B) {
	cb := callServers(b)
	const rounds = 20
	for _, workers := range []int{8, 16} {
		for _, c := range []struct {
			name             string
			body             string
			bareURL          string
			bareHdr, fullHdr map[string]string
		}{
			{"modern", cb.modern, cb.bare, modernHeaders("tools/call", "bench_echo"), modernHeaders("tools/call", "bench_echo")},
			{"legacy-session", cb.legacy, cb.bareSessions, cb.bareHdr, cb.fullHdr},
			{"legacy-stateless", cb.legacy, cb.bare, map[string]string{"Mcp-Protocol-Version": legacyVersion}, cb.fullHdr},
		} {
			b.Run(fmt.Sprintf("%s/c%d", c.name, workers), func(b *testing.B) {
				per := max(b.N/rounds, workers) // b.N is 1 in the benchmark's first, sizing run
				pair := [2]*loader{newLoader(b, workers, c.bareURL, "", c.bareHdr, c.body), newLoader(b, workers, cb.full, cb.token, c.fullHdr, c.body)}
				var lat [2][]time.Duration
				var took [2]time.Duration
				b.ResetTimer()
				for i := range rounds {
					for j := range 2 {
						k := (i + j) % 2
						l, d, err := pair[k].run(per)
						if err != nil {
							b.Fatal(err)
						}
						lat[k], took[k] = append(lat[k], l...), took[k]+d
					}
				}
				b.StopTimer()
				bs, fs := statsOf(lat[0], took[0]), statsOf(lat[1], took[1])
				b.ReportMetric(bs.rps, "bare-req/s")
				b.ReportMetric(fs.rps, "full-req/s")
				b.ReportMetric(fs.rps/bs.rps, "full/bare")
				b.ReportMetric(float64(fs.p50-bs.p50)/1e3, "p50-diff-µs")
				logRatio(b, c.name, workers, "bare", bs, fs)
			})
		}
	}
}
