package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestMCPRemoteBridge drives mcp-remote (from npm, at the version
// testdata/mcpremote pins), the bridge stdio-only clients use, over its
// stdin and stdout exactly as Claude Desktop would, against a real `visor
// serve`: once with an API key passed as docs/clients.md shows, and once
// with OAuth, where mcp-remote discovers, registers, prints the sign-in URL
// and the test plays the member.
func TestMCPRemoteBridge(t *testing.T) {
	t.Parallel()
	dir := installNodeClient(t, "testdata/mcpremote")
	w := newWorld(t)
	_, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL())
	mcpURL := r.base + "/t/acme/mcp"

	t.Run("api key", func(t *testing.T) {
		b := startBridge(t, dir, []string{mcpURL, "--header", "Authorization:${VISOR_AUTH}"}, "VISOR_AUTH=Bearer "+w.operator)
		b.handshake(t)
		require.Subset(t, b.tools(t), []string{"agent_status", "tasks_create", "create_agent"})
		require.Contains(t, b.agentStatus(t), "ada: active")
	})

	t.Run("oauth", func(t *testing.T) {
		port := freePort(t)
		b := startBridge(t, dir, []string{mcpURL, fmt.Sprint(port), "--host", "127.0.0.1"})
		go func() {
			// The sign-in URL arrives on stderr once the bridge meets the 401.
			sc := bufio.NewScanner(b.stderr)
			for sc.Scan() {
				fmt.Fprintln(b.log, sc.Text())
				if u := strings.TrimSpace(sc.Text()); strings.HasPrefix(u, r.base+"/t/acme/oauth/authorize?") {
					b.consent <- memberAllows(t, r, u, "owner@acme.test", "correct horse battery")
				}
			}
		}()
		b.handshake(t)
		select {
		case page := <-b.consent:
			require.Contains(t, page, "<code>create_agent</code>")
		case <-time.After(time.Minute):
			t.Fatalf("mcp-remote never asked the member to sign in:\n%s", b.log.String())
		}
		require.Subset(t, b.tools(t), []string{"agent_status", "tasks_create", "create_agent"})
		require.Contains(t, b.agentStatus(t), "ada: active")
	})
}

// bridge is a running mcp-remote and the stdio client the test plays.
type bridge struct {
	in      io.WriteCloser
	out     *bufio.Scanner
	stderr  io.Reader
	log     *syncBuffer
	consent chan string
	next    int
}

func startBridge(t *testing.T, dir string, args []string, env ...string) *bridge {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "mcp-remote"), args...)
	// Its token cache lives under HOME; BROWSER=true stands in for the
	// browser it would open, since the test plays the member itself.
	cmd.Env = append(os.Environ(), append([]string{"HOME=" + home, "MCP_REMOTE_CONFIG_DIR=" + filepath.Join(home, ".mcp-auth"),
		"BROWSER=true", "DISPLAY="}, env...)...)
	b := &bridge{log: &syncBuffer{}, consent: make(chan string, 1)}
	var err error
	b.in, err = cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	b.out = bufio.NewScanner(out)
	b.out.Buffer(make([]byte, 1<<20), 1<<20)
	if len(env) > 0 {
		cmd.Stderr = b.log
	} else {
		b.stderr, err = cmd.StderrPipe()
		require.NoError(t, err)
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { b.in.Close(); cancel(); _ = cmd.Wait() })
	return b
}

// call sends a request and returns its result, skipping notifications.
func (b *bridge) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	b.next++
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": b.next, "method": method, "params": params})
	require.NoError(t, err)
	_, err = b.in.Write(append(msg, '\n'))
	require.NoError(t, err)
	for b.out.Scan() {
		var res struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal(b.out.Bytes(), &res), b.out.Text())
		if res.ID == nil || *res.ID != b.next {
			continue
		}
		require.Nil(t, res.Error, "%s: %s", method, res.Error)
		return res.Result
	}
	t.Fatalf("mcp-remote closed its stdout during %s:\n%s", method, b.log.String())
	return nil
}

func (b *bridge) handshake(t *testing.T) {
	t.Helper()
	var init struct {
		ServerInfo struct{ Name string } `json:"serverInfo"`
	}
	require.NoError(t, json.Unmarshal(b.call(t, "initialize", map[string]any{"protocolVersion": legacyVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "stdio-host", "version": "1"}}), &init))
	require.Equal(t, "visor", init.ServerInfo.Name)
	_, err := b.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	require.NoError(t, err)
}

func (b *bridge) tools(t *testing.T) []string {
	t.Helper()
	var res struct{ Tools []struct{ Name string } }
	require.NoError(t, json.Unmarshal(b.call(t, "tools/list", map[string]any{}), &res))
	names := make([]string, 0, len(res.Tools))
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func (b *bridge) agentStatus(t *testing.T) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	require.NoError(t, json.Unmarshal(b.call(t, "tools/call", map[string]any{"name": "agent_status", "arguments": map[string]any{}}), &res))
	require.NotEmpty(t, res.Content)
	return res.Content[0].Text
}
