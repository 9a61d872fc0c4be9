package mcpstdio_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// quantiles reports the p50 and p99 of ds as benchmark metrics.
func quantiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	q := func(p float64) float64 { return float64(ds[int(float64(len(ds)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchmarkStdioServer calls a stdio server's echo tool through the
// service (policy, catalog read, schema check, limits, fence) over the
// worker plane in Redis, one call at a time: cold, each call after every
// container was removed (create, start, MCP initialize, then the call);
// warm, on the kept container and session. The Go SDK fixture server and,
// when VISOR_TEST_MCP_EVERYTHING is set, the reference server under node.
func BenchmarkStdioServer(b *testing.B) {
	type server struct {
		name    string
		image   func(testing.TB) string
		command []string
		args    map[string]any
	}
	servers := []server{{"go-sdk", fixtureImage, fixtureCommand, map[string]any{"text": "hello"}}}
	if os.Getenv(everythingEnv) != "" {
		servers = append(servers, server{"everything", everythingImage, everythingCommand, map[string]any{"message": "hello"}})
	}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			image := s.image(b)
			h := newHarness(b, []string{image}, time.Hour)
			ctx := context.Background()
			h.add(b, h.a, "bench", image, s.command, nil)
			sub := h.employee(h.a, h.agentA)
			call := func() time.Duration {
				start := time.Now()
				_, err := h.svc.Call(ctx, sub, "bench:echo", s.args)
				d := time.Since(start)
				require.NoError(b, err)
				return d
			}
			b.Run("cold", func(b *testing.B) {
				ds := make([]time.Duration, 0, b.N)
				for b.Loop() {
					h.m.CloseAll()
					ds = append(ds, call())
				}
				quantiles(b, ds)
			})
			b.Run("warm", func(b *testing.B) {
				call()
				ds := make([]time.Duration, 0, b.N)
				for b.Loop() {
					ds = append(ds, call())
				}
				quantiles(b, ds)
			})
		})
	}
}
