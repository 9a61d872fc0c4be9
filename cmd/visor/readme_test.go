package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeDocumentsEveryVariable keeps the README's configuration table
// in step with Config: add a row there when you add a variable here.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(b)
	for _, v := range envVars {
		require.Contains(t, readme, "| `"+v.Name+"` |", "README.md's Configuration table needs a row for %s", v.Name)
	}
}

// TestCIRunsTheReadmeTestCommand: `.ci/run` runs exactly the command the
// README tells a newcomer to run.
func TestCIRunsTheReadmeTestCommand(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	ci, err := os.ReadFile("../../.ci/run")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)## Test it\n\n```sh\n([^\n]+)\n```").FindSubmatch(readme)
	require.NotNil(t, m, "README.md needs a '## Test it' section with one command")
	cmd := string(m[1])
	require.True(t, strings.HasPrefix(cmd, "go test "), cmd)
	require.Regexp(t, "(?m)^"+regexp.QuoteMeta(cmd)+"$", string(ci))
	require.Contains(t, string(ci), "export VISOR_TEST_REQUIRE_SERVICES=1")
}
