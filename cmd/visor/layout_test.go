package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/visorhq/visor"

// TestLayoutAndDependencyDirection: the mandated top level exists, and
// dependencies point one way — services import no infrastructure and no
// edge; storage imports no edge; only cmd imports cmd.
func TestLayoutAndDependencyDirection(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"cmd", "services", "auth", "storage", "web", "migrations", "deploy", "go.mod", "README.md"} {
		_, err := os.Stat("../../" + d)
		require.NoError(t, err, "mandated top-level entry %s", d)
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	require.NoError(t, err)
	infra := []string{"github.com/jackc/", "github.com/redis/", "github.com/labstack/", "github.com/riverqueue/",
		"github.com/ory/", "go.opentelemetry.io/", "database/sql",
		module + "/storage", module + "/web", module + "/auth", module + "/cmd", module + "/worker"}
	edges := []string{module + "/web", module + "/auth", module + "/cmd"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			switch {
			case strings.HasPrefix(pkg, module+"/services/"):
				for _, bad := range infra {
					require.False(t, strings.HasPrefix(imp, bad), "%s imports %s: services import no infrastructure", pkg, imp)
				}
			case strings.HasPrefix(pkg, module+"/storage/"):
				for _, bad := range edges {
					require.False(t, strings.HasPrefix(imp, bad), "%s imports %s: storage imports no edge", pkg, imp)
				}
			case strings.HasPrefix(pkg, module+"/auth"):
				require.False(t, strings.HasPrefix(imp, module+"/web/ui"), "%s imports %s: the web UI draws auth's pages, never the reverse", pkg, imp)
				require.False(t, strings.HasPrefix(imp, module+"/cmd"), "%s imports %s: only cmd wires cmd", pkg, imp)
			case !strings.HasPrefix(pkg, module+"/cmd/"):
				require.False(t, strings.HasPrefix(imp, module+"/cmd"), "%s imports %s: only cmd wires cmd", pkg, imp)
			}
		}
	}
}
