package pages_test

import (
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/web/pages"
)

var update = flag.Bool("update", false, "rewrite golden files")

var nonceRE = regexp.MustCompile(`[A-Za-z0-9_-]{22}`)

type scope struct {
	Name, Words string
	Tools       []string
}

// TestPagesMatchGolden renders each page with fixed data (hostile strings
// included, to show they are escaped) and compares it with its golden file.
func TestPagesMatchGolden(t *testing.T) {
	for name, p := range map[string]pages.Page{
		"login.html": {Title: "Sign in", Tenant: "Acme <Corp>", Data: struct{ Action, CSRF, ReturnTo, Email, Error string }{
			"/t/acme/login", "csrf-token", "/t/acme/oauth/authorize?x=1&y=2", `"><script>alert(1)</script>`, "Wrong email or password."}},
		"consent.html": {Title: "Allow access", Tenant: "Acme", Data: struct {
			ClientName, ClientID, RedirectHost, MemberEmail, Action, CSRF, Role string
			Scopes                                                              []scope
			Withheld                                                            []string
		}{"Evil <b>Client</b>", "https://client.example/meta.json", "127.0.0.1:9999", "alice@acme.test",
			"/t/acme/oauth/authorize?client_id=x&state=y", "csrf-token", "viewer",
			[]scope{{"tools:read", "see the tools", []string{"agent_status", "<b>tasks_list</b>"}}, {"tools:write", "change things", nil}}, []string{"tools:write", "admin:write"}}},
		"error.html": {Title: "Cannot continue", Tenant: "Acme", Data: "The redirect_uri is not one this application registered."},
	} {
		w := httptest.NewRecorder()
		require.NoError(t, pages.Render(w, 200, name, p, "http://127.0.0.1:9999"))
		csp := w.Header().Get("Content-Security-Policy")
		require.Regexp(t, `^default-src 'none'; style-src 'nonce-[^']+'; img-src 'self'; form-action 'self' http://127.0.0.1:9999; frame-ancestors 'none'; base-uri 'none'$`, csp)
		require.NotContains(t, w.Body.String(), "<script>")
		got := nonceRE.ReplaceAllString(w.Body.String(), "NONCE")
		golden := filepath.Join("testdata", name+".golden")
		if *update {
			require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err, "run go test ./web/pages -update")
		require.Equal(t, string(want), got, "%s changed; if intended, run go test ./web/pages -update and review", name)
	}
}
