package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/services/sandbox"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// tsResult is what testdata/tsclient/client.mjs prints once connected.
type tsResult struct {
	Scope       string   `json:"scope"`
	Tools       []string `json:"tools"`
	AgentStatus string   `json:"agentStatus"`
	Server      struct {
		Name, Version string
	} `json:"server"`
}

// TestTypeScriptSDKOAuth runs a client built on the official MCP TypeScript
// SDK (installed from npm at the version testdata/tsclient pins) against a
// real `visor serve`. The SDK does the whole OAuth discovery by itself —
// the 401, the resource and authorization server metadata, dynamic
// registration, PKCE, the token exchange — asking for the scopes the 401
// advertises, and the test plays the member in the browser: it opens the
// URL the client prints, signs in, allows, and follows the redirect to the
// client's loopback listener. The owner's client gets every tool an OAuth
// client may see, as the consent page said; a viewer's gets the
// read-only ones.
func TestTypeScriptSDKOAuth(t *testing.T) {
	t.Parallel()
	dir := installNodeClient(t, "testdata/tsclient")
	w := newWorld(t)
	for email, role := range map[string]identity.Role{"owner@acme.test": identity.RoleOwner, "viewer@acme.test": identity.RoleViewer} {
		_, err := w.ids.CreateMember(context.Background(), w.acme.ID, email, "correct horse battery", role)
		require.NoError(t, err)
	}
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL())
	var every []string
	for _, tl := range catalog.New((*agents.Service)(nil), (*grants.Service)(nil), (*board.Service)(nil), (*sandbox.Tools)(nil),
		(*knowledge.Service)(nil), (*dbsources.Service)(nil), (*upstreams.Service)(nil)).ClientTools(w.acme, identity.ToolScopes) {
		every = append(every, tl.Name)
	}

	res, consent := runTSClient(t, dir, r, "owner@acme.test")
	require.Equal(t, "visor", res.Server.Name)
	require.Equal(t, "tools:read tools:write tools:admin", res.Scope)
	require.ElementsMatch(t, every, res.Tools)
	require.Subset(t, res.Tools, []string{"agent_status", "tasks_create", "create_agent", "agent_update", "agent_remove"})
	require.Contains(t, res.AgentStatus, "ada: active")
	for _, name := range res.Tools {
		require.Contains(t, consent, "<code>"+name+"</code>", "the consent page names every tool the client gets")
	}

	res, consent = runTSClient(t, dir, r, "viewer@acme.test")
	require.Equal(t, "tools:read", res.Scope)
	require.ElementsMatch(t, []string{"agent_status", "tasks_list", "memory_search", "wiki_read"}, res.Tools)
	require.Contains(t, res.AgentStatus, "ada: active")
	require.Contains(t, consent, "As a viewer you cannot grant <code>tools:write</code>, <code>tools:admin</code>")
	require.NotContains(t, consent, "<code>create_agent</code>")
}

// runTSClient runs testdata/tsclient against r's acme endpoint, signs in
// as email when it asks, and returns what it printed and the consent page
// the member saw.
func runTSClient(t *testing.T, dir string, r *replica, email string) (*tsResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", r.base+"/t/acme/mcp")
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { cancel(); _ = cmd.Wait() }()

	var res *tsResult
	var consent string
	sc := bufio.NewScanner(out)
	for res == nil && sc.Scan() {
		var line struct {
			Authorize string    `json:"authorize"`
			Result    *tsResult `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		if line.Authorize != "" {
			consent = memberAllows(t, r, line.Authorize, email, "correct horse battery")
		}
		res = line.Result
	}
	require.NotNil(t, res, "the client ended without connecting:\n%s", stderr.String())
	return res, consent
}

// installNodeClient copies the npm project in src to a temporary
// directory and installs its locked dependencies there.
func installNodeClient(t *testing.T, src string) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			pgtest.Unavailable(t, "Node.js ("+bin+")", err)
		}
	}
	dir := t.TempDir()
	files, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// install, not ci: it installs the locked versions too, and tolerates
	// the lock file leaving out other platforms' optional packages.
	npm := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-save")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		pgtest.Unavailable(t, "the npm registry", errorWithOutput{err, out})
	}
	return dir
}

type errorWithOutput struct {
	err error
	out []byte
}

func (e errorWithOutput) Error() string { return e.err.Error() + ": " + string(e.out) }

// memberAllows plays the member's browser on an authorization URL a client
// opened: sign in, Allow, then follow the redirect to the client. It
// returns the consent page.
func memberAllows(t *testing.T, r *replica, authorizeURL, email, password string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status, _, page := oauthDo(t, b, http.MethodGet, authorizeURL, nil, r.base)
	require.Equal(t, http.StatusOK, status, page)
	status, h, _ := oauthDo(t, b, http.MethodPost, r.base+"/t/acme/login", url.Values{"csrf_token": {oauthField(t, "csrf_token", page)},
		"return_to": {oauthField(t, "return_to", page)}, "email": {email}, "password": {password}}, r.base)
	require.Equal(t, http.StatusSeeOther, status)
	_, _, page = oauthDo(t, b, http.MethodGet, r.base+h.Get("Location"), nil, r.base)
	m := regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, "no consent form in\n%s", page)
	status, h, _ = oauthDo(t, b, http.MethodPost, r.base+html.UnescapeString(m[1]),
		url.Values{"csrf_token": {oauthField(t, "csrf_token", page)}, "decision": {"allow"}}, r.base)
	require.Equal(t, http.StatusSeeOther, status)
	res, err := http.Get(h.Get("Location"))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	return page
}
