package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestInspectorCommandsRunAsDocumented runs the API-key Inspector commands
// of docs/clients.md word for word through a shell, npx included, against
// a real `visor serve`: only the dev URL is replaced by the test server's
// and $VISOR_KEY is set. The guide must name the Node.js major version the
// test runs on.
func TestInspectorCommandsRunAsDocumented(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"node", "npx", "sh"} {
		if _, err := exec.LookPath(bin); err != nil {
			pgtest.Unavailable(t, bin, err)
		}
	}
	raw, err := os.ReadFile("../../../docs/clients.md")
	require.NoError(t, err)
	guide := string(raw)
	nodeVersion, err := exec.Command("node", "--version").Output()
	require.NoError(t, err)
	major := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(string(nodeVersion)), "v"), ".", 2)[0]
	require.Regexp(t, `Tested with: Node\.js `+major+`\.`, guide, "the guide names the Node.js version the tests run")

	// Indented code lines, joined where they end in a backslash.
	joined := strings.ReplaceAll(guide, "\\\n      ", "")
	var commands []string
	for _, line := range strings.Split(joined, "\n") {
		if cmd, ok := strings.CutPrefix(line, "    npx "); ok && strings.Contains(cmd, "$VISOR_KEY") {
			commands = append(commands, "npx "+cmd)
		}
	}
	require.Len(t, commands, 2, "the guide's API-key Inspector commands")

	w := newWorld(t)
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL())
	wants := []*regexp.Regexp{regexp.MustCompile(`"name":\s*"agent_status"`), regexp.MustCompile(`ada: active`)}
	for i, command := range commands {
		command = strings.ReplaceAll(command, "http://localhost:8080/t/demo/mcp", r.base+"/t/acme/mcp")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		cmd.Env = append(os.Environ(), "VISOR_KEY="+w.operator, "MCP_INSPECTOR_SECRET_STORE=memory", "NO_COLOR=1")
		out, err := cmd.Output()
		cancel()
		if err != nil && strings.Contains(exitStderr(err), "ENOTFOUND") {
			pgtest.Unavailable(t, "the npm registry", err)
		}
		require.NoError(t, err, "%s\n%s", command, exitStderr(err))
		require.Regexp(t, wants[i], string(out), command)
	}
}
