package upstream_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// everythingEnv names the reference "everything" MCP server's entry point
// (node_modules/@modelcontextprotocol/server-everything/dist/index.js),
// installed from the npm registry by .ci/run.
const everythingEnv = "VISOR_TEST_MCP_EVERYTHING"

// startEverything runs the reference server with transport (streamableHttp
// or sse) on a free loopback port and returns its base URL. Without it the
// test is skipped, or fails when VISOR_TEST_REQUIRE_SERVICES is set.
func startEverything(t *testing.T, transport string) string {
	t.Helper()
	entry := os.Getenv(everythingEnv)
	if entry == "" {
		if os.Getenv("VISOR_TEST_REQUIRE_SERVICES") != "" {
			t.Fatalf("%s is not set: install @modelcontextprotocol/server-everything from the npm registry (.ci/run does)", everythingEnv)
		}
		t.Skipf("%s is not set (.ci/run installs the reference server)", everythingEnv)
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the reference server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cmd := exec.Command(node, entry, transport)
	cmd.Dir = filepath.Dir(entry)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the reference server listens")
	return "http://" + addr
}

// TestEverythingServer: the reference server from the npm registry, over
// Streamable HTTP and over HTTP+SSE: listed, searched, inspected and
// called, its images and structured content passed through.
func TestEverythingServer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, transport, path string
		tr                    upstreams.Transport
	}{{"everything", "streamableHttp", "/mcp", upstreams.StreamableHTTP}, {"everything-sse", "sse", "/sse", upstreams.SSE}} {
		t.Run(c.transport, func(t *testing.T) {
			base := startEverything(t, c.transport)
			h := newHarness(t)
			ctx := context.Background()
			srv := h.add(t, h.a, c.name, base+c.path, func(in *upstreams.Input) { in.Transport = c.tr })
			require.GreaterOrEqual(t, srv.ToolCount, 10)
			sub := h.employee(t, h.a, h.agentA, nil)

			hits, _, err := h.svc.Search(ctx, sub, c.name, "echo message", 3)
			require.NoError(t, err)
			require.Equal(t, c.name+":echo", hits[0].Name)
			tool, err := h.svc.Inspect(ctx, sub, c.name+":get-structured-content")
			require.NoError(t, err)
			require.Contains(t, string(tool.OutputSchema), "temperature")

			out, err := h.svc.Call(ctx, sub, c.name+":echo", map[string]any{"message": "こんにちは"})
			require.NoError(t, err)
			require.Contains(t, contentOf(t, out.Result.Content)[0]["text"], "Echo: こんにちは")
			out, err = h.svc.Call(ctx, sub, c.name+":get-sum", map[string]any{"a": 2, "b": 3})
			require.NoError(t, err)
			require.Contains(t, contentOf(t, out.Result.Content)[0]["text"], "5")
			out, err = h.svc.Call(ctx, sub, c.name+":get-structured-content", map[string]any{"location": "Chicago"})
			require.NoError(t, err)
			require.Contains(t, string(out.Result.Structured), "temperature")
			out, err = h.svc.Call(ctx, sub, c.name+":get-tiny-image", nil)
			require.NoError(t, err)
			var image bool
			for _, b := range contentOf(t, out.Result.Content) {
				image = image || (b["type"] == "image" && b["mimeType"] == "image/png" && b["data"] != "")
			}
			require.True(t, image, "the image block passes through")
			_, err = h.svc.Call(ctx, sub, c.name+":get-sum", map[string]any{"a": "two", "b": 3})
			require.True(t, fault.Is(err, fault.Invalid), "checked against the schema before it leaves: %v", err)
		})
	}
}
