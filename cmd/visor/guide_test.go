package main

import (
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
		"npx @modelcontextprotocol/inspector --cli " + mcpURL + " --transport http",
		`"args": ["-y", "mcp-remote", "` + mcpURL + `", "--header", "Authorization:${VISOR_AUTH}"]`,
		`"type": "http"`,
		`"serverUrl": "` + mcpURL + `"`,
	} {
		require.Contains(t, guide, want)
	}
}
