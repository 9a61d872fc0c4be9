package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/visorhq/visor"

// TestLayoutAndDependencyDirection: the mandated top level exists, and
// dependencies point one way — services import no infrastructure and no
// edge (their tests no container engine or browser either: those live in
// docker/, named by technology); storage imports no edge; only cmd imports
// cmd.
func TestLayoutAndDependencyDirection(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"cmd", "services", "auth", "storage", "web", "migrations", "deploy", "go.mod", "README.md"} {
		_, err := os.Stat("../../" + d)
		require.NoError(t, err, "mandated top-level entry %s", d)
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	require.NoError(t, err)
	engines := []string{"github.com/docker/", "github.com/containerd/", "github.com/moby/", "github.com/chromedp/",
		module + "/docker"}
	infra := append([]string{"github.com/jackc/", "github.com/redis/", "github.com/labstack/", "github.com/riverqueue/",
		"github.com/ory/", "go.opentelemetry.io/", "database/sql", "github.com/go-sql-driver/",
		module + "/storage", module + "/web", module + "/auth", module + "/cmd", module + "/worker"}, engines...)
	tests, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}`, module+"/services/...").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(tests)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			for _, bad := range engines {
				require.False(t, strings.HasPrefix(imp, bad), "%s's tests import %s: container and browser code lives in docker/", pkg, imp)
			}
		}
	}
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

// TestOAuthEndpointsLiveUnderWeb: auth/ keeps the authorization server's
// core (the fosite provider, its storage, token and session resolution)
// and serves no HTTP of its own — no package under auth/ registers a route
// or draws a page, and auth/oauth imports no web framework — while the
// endpoints, cookies and pages live in web/oauth, whose Pages the web UI
// implements without reaching into auth/oauth.
func TestOAuthEndpointsLiveUnderWeb(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/auth/...", module+"/web/ui").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if pkg == module+"/web/ui" {
				require.NotEqual(t, module+"/auth/oauth", imp, "web/ui draws the OAuth pages through web/oauth.Pages, not from auth/oauth")
				continue
			}
			require.False(t, strings.HasPrefix(imp, module+"/web/"),
				"%s imports %s: auth/ imports no web package", pkg, imp)
			require.NotContains(t, []string{"html/template", "text/template"}, imp, "%s imports %s: auth/ draws no pages", pkg, imp)
			if strings.HasPrefix(pkg, module+"/auth/oauth") {
				require.False(t, strings.HasPrefix(imp, "github.com/labstack/"), "%s imports %s: the OAuth endpoints are web/oauth's", pkg, imp)
			}
		}
	}
	// No route is registered under auth/ outside tests: no call of a
	// router's registration method with a path, nor net/http's.
	register := map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true, "HEAD": true,
		"Any": true, "Match": true, "Add": true, "Group": true, "Handle": true, "HandleFunc": true}
	fset := token.NewFileSet()
	require.NoError(t, filepath.WalkDir("../../auth", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if lit, isLit := call.Args[0].(*ast.BasicLit); ok && isLit && lit.Kind == token.STRING && register[sel.Sel.Name] &&
				strings.HasPrefix(strings.Trim(lit.Value, "`\""), "/") {
				t.Errorf("%s registers route %s: HTTP endpoints live under web/", fset.Position(call.Pos()), lit.Value)
			}
			return true
		})
		return nil
	}))
	// The endpoints are where this test says they are.
	_, err = os.Stat("../../web/oauth/authorize.go")
	require.NoError(t, err, "web/oauth holds the authorization endpoint")
}
