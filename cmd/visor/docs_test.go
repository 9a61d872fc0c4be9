package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScopesDocIsCurrent fails when docs/scopes.md is not what `visor docs
// scopes` prints from the code: a tool's scope, gate or title changed, or
// the file was edited by hand.
func TestScopesDocIsCurrent(t *testing.T) {
	res := runCmd(t, nil, "docs", "scopes")
	require.NoError(t, res.err, res.stderr)
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "scopes.md"))
	require.NoError(t, err)
	require.Equal(t, string(want), res.stdout,
		"docs/scopes.md is stale; run: go run ./cmd/visor docs scopes > docs/scopes.md")
	require.Contains(t, res.stdout, "| `create_agent` | Create AI employee | yes | yes |")
}
