package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
)

// TestUpstreamConnectInABrowser: one Visor tenant (globex, on a replica
// whose base URL is http://localhost:…, so the browser keeps its session
// cookie apart) is an OAuth-protected upstream MCP server of another
// (acme). In headless Chromium, acme's owner adds it on the MCP servers
// page (saved, not connected), clicks Connect, signs in to globex and
// consents there, and comes back connected: Visor registered itself
// dynamically, ran the code flow with PKCE and holds the token sealed.
// ada, an AI employee of acme, then finds and calls globex's tools. The
// page's other controls work with their notices (refresh, disable,
// enable, a secret set and unset, never shown); Disconnect revokes the
// token (ada's call is then refused, telling to Connect); Remove removes
// the server. axe-core checks the pages in English and Japanese.
func TestUpstreamConnectInABrowser(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("Chromium is needed at %s: %v", chromiumPath, err)
	}
	key, err := secrets.NewKey("e2e")
	require.NoError(t, err)
	redis := privateRedis(t)
	w := newWorld(t)
	ctx := context.Background()
	_, err = w.ids.CreateMember(ctx, w.acme.ID, "owner@acme.test", ownerPassword, identity.RoleOwner)
	require.NoError(t, err)
	_, err = w.ids.CreateMember(ctx, w.globex.ID, "gina@globex.test", ownerPassword, identity.RoleOperator)
	require.NoError(t, err)
	env := []string{"VISOR_SECRET_KEYS=" + key, "VISOR_MCP_DEV_HOSTS=localhost,127.0.0.1", "VISOR_LIVE_RECONCILE_EVERY=1m"}
	up := startReplicaAt(t, "localhost", "upstream", w.dbURL, redis.URL(), env...)
	r := startReplica(t, "A", w.dbURL, redis.URL(), env...)

	browser := chromium(t)
	tab, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	tab, cancel := context.WithTimeout(tab, 6*time.Minute)
	defer cancel()
	dash := r.base + "/t/acme/dashboard"
	require.NoError(t, chromedp.Do(tab, chromedp.EmulateViewport(1280, 900)))
	signIn := func(email string) {
		require.NoError(t, chromedp.Do(tab,
			chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
			chromedp.SendKeys(chromedp.CSS(`input[name=password]`), ownerPassword),
			chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
		))
	}
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(dash+"/mcp-servers")))
	signIn("owner@acme.test")
	waitFor(t, tab, `location.pathname.endsWith("/dashboard/mcp-servers") && !!document.querySelector("#mcp-name")`, "the MCP servers page after sign-in")
	checkAccessible(t, tab, "mcp-servers, empty (en)")

	// Add globex's MCP endpoint, which needs a person's consent: saved,
	// and not connected yet.
	require.NoError(t, chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS(`#mcp-name`), "globex"),
		chromedp.SendKeys(chromedp.CSS(`#mcp-url`), up.base+"/t/globex/mcp"),
		chromedp.SetValue(chromedp.CSS(`#mcp-auth`), "oauth"),
		chromedp.Click(chromedp.CSS(`form[aria-labelledby=new-mcp] button.primary`)),
	))
	waitFor(t, tab, `location.search.includes("done=mcp_added_unreachable")`, "the added server's notice")
	require.Contains(t, textOf(t, tab, "#mcp-globex"), "Not connected")
	require.Contains(t, textOf(t, tab, "#mcp-globex"), "not connected", "the row says why its tools are not listed")
	require.Contains(t, callToolResult(t, r, w.adaKey, "mcp_tool_search", map[string]any{"server": "globex"}).Content[0].Text,
		"No upstream tool", "no tool of an unconnected server is known")

	// Connect: a page says where the member is going; globex asks its own
	// member to sign in and consent; back on acme's page, connected.
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`form[action$="/mcp-servers/globex/connect"] button`))))
	waitFor(t, tab, `!!document.getElementById("mcp-continue")`, "the page before the upstream's consent")
	require.Contains(t, textOf(t, tab, "main"), up.base)
	checkAccessible(t, tab, "connect (en)")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#mcp-continue`))))
	waitFor(t, tab, `location.href.startsWith("`+up.base+`/t/globex/") && !!document.querySelector("input[name=email]")`, "globex's sign-in page")
	signIn("gina@globex.test")
	waitFor(t, tab, `!!document.querySelector('button[name=decision][value=allow]')`, "globex's consent page")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`button[name=decision][value=allow]`))))
	waitFor(t, tab, `location.href.startsWith("`+dash+`/mcp-servers") && location.search.includes("done=mcp_connected")`, "acme's page, connected")
	row := textOf(t, tab, "#mcp-globex")
	require.Contains(t, row, "Connected")
	require.NotContains(t, row, "Not connected")
	checkAccessible(t, tab, "mcp-servers, connected (en)")
	shoot(t, tab, "mcp-servers.en")

	// The callback cannot be replayed: its state was taken. The refusal is
	// shown and audited.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(dash+"/mcp-servers/callback?state=replayed&code=stolen")))
	waitFor(t, tab, `!!document.querySelector("p.error")`, "the refused callback")
	require.Contains(t, textOf(t, tab, "p.error"), "click Connect again")
	var refusedRows int
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND action = 'connectMCPServer' AND outcome <> 'ok'`,
		w.acme.ID).Scan(&refusedRows))
	require.Equal(t, 1, refusedRows, "the refused callback is audited")
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(dash+"/mcp-servers"), chromedp.WaitVisible(chromedp.CSS(`#mcp-globex`))))

	// The token is sealed at rest, for the tenant.
	var n int
	var sealed string
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT count(*), min(sealed_access) FROM mcp_server_tokens WHERE tenant_id = $1 AND member_id = '00000000-0000-0000-0000-000000000000'`, w.acme.ID).Scan(&n, &sealed))
	require.Equal(t, 1, n)
	require.False(t, strings.HasPrefix(sealed, "vso_"), "sealed, not the token")

	// ada finds and calls globex's tools through acme, with the token Visor
	// holds (never her own key).
	found := callToolResult(t, r, w.adaKey, "mcp_tool_search", map[string]any{"server": "globex"})
	require.Contains(t, found.Content[0].Text, "globex:agent_status")
	got := callToolResult(t, r, w.adaKey, "mcp_tool_call", map[string]any{"name": "globex:agent_status", "arguments": map[string]any{}})
	require.False(t, got.IsError, "%+v", got)

	// The other controls, each with its notice.
	for _, step := range []struct{ button, notice string }{
		{`form[action$="/mcp-servers/globex/refresh"] button`, "mcp_refreshed"},
		{`form[action$="/mcp-servers/globex/disable"] button`, "mcp_disabled"},
		{`form[action$="/mcp-servers/globex/enable"] button`, "mcp_enabled"},
	} {
		require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(step.button))))
		waitFor(t, tab, `location.search.includes("done=`+step.notice+`") && !!document.querySelector("p.notice")`, step.notice)
	}
	require.NoError(t, chromedp.Do(tab,
		chromedp.Click(chromedp.CSS(`#mcp-globex details summary`)),
		chromedp.SendKeys(chromedp.CSS(`#sn-globex`), "X-Team"),
		chromedp.SendKeys(chromedp.CSS(`#sv-globex`), "team-secret-value"),
		chromedp.Click(chromedp.CSS(`form[action$="/mcp-servers/globex/secrets"] button`)),
	))
	waitFor(t, tab, `location.search.includes("done=mcp_secret_set")`, "the saved secret's notice")
	require.Contains(t, textOf(t, tab, "#mcp-globex"), "X-Team")
	require.NotContains(t, evalString(t, tab, `document.documentElement.outerHTML`), "team-secret-value", "a secret's value is never shown")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`form[action$="/mcp-servers/globex/secrets/unset"] button`))))
	waitFor(t, tab, `location.search.includes("done=mcp_secret_unset")`, "the removed secret's notice")
	require.NotContains(t, textOf(t, tab, "#mcp-globex"), "X-Team")

	// In Japanese.
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS(`#lang-menu`), "ja"),
		chromedp.Click(chromedp.CSS(`footer button[type=submit]`)),
	))
	waitFor(t, tab, `document.documentElement.lang === "ja" && !!document.querySelector("#mcp-globex")`, "the page in Japanese")
	require.Equal(t, "上流のMCPサーバー", textOf(t, tab, "h1"))
	require.Contains(t, textOf(t, tab, "#mcp-globex"), "接続済み")
	checkAccessible(t, tab, "mcp-servers (ja)")
	shoot(t, tab, "mcp-servers.ja")

	// Disconnect revokes the token: ada's call is refused with what to do.
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`form[action$="/mcp-servers/globex/disconnect"] button`))))
	waitFor(t, tab, `location.search.includes("done=mcp_disconnected")`, "the disconnect's notice")
	require.Contains(t, textOf(t, tab, "#mcp-globex"), "未接続")
	require.Contains(t, upstreamRefusal(t, r, w.adaKey), "Connect it in the dashboard")
	var refusedCalls int
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND tool = 'mcp_tool_call'
		AND outcome <> 'ok' AND message LIKE '%Connect it in the dashboard%'`, w.acme.ID).Scan(&refusedCalls))
	require.Equal(t, 1, refusedCalls, "the refused call is audited")
	require.NoError(t, w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM mcp_server_tokens WHERE tenant_id = $1`, w.acme.ID).Scan(&n))
	require.Zero(t, n)

	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`form[action$="/mcp-servers/globex/remove"] button`))))
	waitFor(t, tab, `location.search.includes("done=mcp_removed")`, "the removal's notice")
	require.Empty(t, evalString(t, tab, `document.getElementById("mcp-globex") ? "still there" : ""`))
}

// upstreamRefusal calls globex:agent_status through r as token and returns
// the answer's body, failing the test when the call succeeds.
func upstreamRefusal(t *testing.T, r *replica, token string) string {
	t.Helper()
	res := mcpSend(t, r, token, modernVersion, "", map[string]any{"id": 1, "method": "tools/call",
		"params": map[string]any{"_meta": modernMeta(), "name": "mcp_tool_call",
			"arguments": map[string]any{"name": "globex:agent_status", "arguments": map[string]any{}}}})
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.True(t, res.StatusCode != http.StatusOK || strings.Contains(string(body), `"isError":true`) || strings.Contains(string(body), `"error"`),
		"the call is refused: %d %s", res.StatusCode, body)
	return string(body)
}
