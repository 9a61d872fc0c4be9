package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClientsGuideShowsWhatIsTested keeps docs/clients.md to the commands
// and shapes the banner prints and the e2e tests run (the Inspector CLI,
// mcp-remote with a key from the environment).
func TestClientsGuideShowsWhatIsTested(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "clients.md"))
	require.NoError(t, err)
	guide := string(b)
	const mcpURL = "http://localhost:8080/t/demo/mcp"
	for _, want := range []string{
		claudeCodeSnippet(mcpURL, ""),
		`--header "Authorization: Bearer $VISOR_KEY"`,
		"npx -y @modelcontextprotocol/inspector@" + pinned(t, "inspector", "@modelcontextprotocol/inspector") + " --cli " + mcpURL + " --transport http",
		`"args": ["-y", "mcp-remote@` + pinned(t, "mcpremote", "mcp-remote") + `", "` + mcpURL + `", "--header", "Authorization:${VISOR_AUTH}"]`,
		"npm install @modelcontextprotocol/sdk@" + pinned(t, "tsclient", "@modelcontextprotocol/sdk"),
		"Tested with: Node.js ",
		"MCP Inspector " + pinned(t, "inspector", "@modelcontextprotocol/inspector"),
		"mcp-remote " + pinned(t, "mcpremote", "mcp-remote"),
		"TypeScript SDK " + pinned(t, "tsclient", "@modelcontextprotocol/sdk"),
		`"type": "http"`,
		`"serverUrl": "` + mcpURL + `"`,
	} {
		require.Contains(t, guide, want)
	}
}

// pinned is the version of pkg the e2e client in testdata/dir installs.
func pinned(t *testing.T, dir, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("e2e", "testdata", dir, "package.json"))
	require.NoError(t, err)
	var manifest struct{ Dependencies map[string]string }
	require.NoError(t, json.Unmarshal(b, &manifest))
	v := manifest.Dependencies[pkg]
	require.NotEmpty(t, v, "%s pins %s", dir, pkg)
	return v
}
