package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestInspectorCLI runs the MCP Inspector's CLI (from npm, at the version
// testdata/inspector pins) against a real `visor serve`, as docs/clients.md
// tells a user to: with an API key, and with OAuth, where the Inspector
// discovers, registers and prints the sign-in URL, and the test plays the
// member in the browser.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	dir := installNodeClient(t, "testdata/inspector")
	w := newWorld(t)
	_, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL())
	mcpURL := r.base + "/t/acme/mcp"
	home := t.TempDir()
	inspector := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "mcp-inspector"),
			append([]string{"--cli", mcpURL, "--transport", "http"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "MCP_AUTO_OPEN_ENABLED=true", "MCP_INSPECTOR_SECRET_STORE=memory", "NO_COLOR=1")
		return cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// API key.
	out, err := inspector(ctx, "--method", "tools/list", "--header", "Authorization: Bearer "+w.operator).Output()
	require.NoError(t, err, "%s", exitStderr(err))
	require.Subset(t, inspectorTools(t, out), []string{"agent_status", "create_agent"})
	out, err = inspector(ctx, "--method", "tools/call", "--tool-name", "agent_status", "--header", "Authorization: Bearer "+w.operator).Output()
	require.NoError(t, err, "%s", exitStderr(err))
	require.Contains(t, string(out), "ada: active")

	// OAuth: the sign-in URL arrives on stderr; the callback listens on a
	// free port.
	cmd := inspector(ctx, "--method", "tools/list", "--callback-url", fmt.Sprintf("http://127.0.0.1:%d/oauth/callback", freePort(t)))
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var stdout syncBuffer
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if u, ok := strings.CutPrefix(sc.Text(), "Please navigate to: "); ok {
			memberAllows(t, r, strings.TrimSpace(u), "owner@acme.test", "correct horse battery")
		}
	}
	require.NoError(t, cmd.Wait(), seen.String())
	require.Subset(t, inspectorTools(t, []byte(stdout.String())), []string{"agent_status", "create_agent", "agent_update", "agent_remove"},
		"the owner's consent covers every tool scope")
}

func inspectorTools(t *testing.T, out []byte) []string {
	t.Helper()
	var res struct{ Tools []struct{ Name string } }
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
