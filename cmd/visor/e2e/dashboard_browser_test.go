package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/identity"
)

const ownerPassword = "correct horse battery staple"

// screenshots, when set, is the directory the browser test writes its
// screenshots of the dashboard to (docs/screenshots):
//
//	go test ./cmd/visor/e2e -run TestDashboardInABrowser -args -screenshots=$PWD/docs/screenshots
var screenshots = flag.String("screenshots", "", "write the dashboard's screenshots (<page>.<lang>.png) to this directory")

// shoot captures the whole page the tab shows as a PNG, checks that it is
// one, and writes it to the screenshots directory when one is set.
func shoot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	require.NoError(t, err, name)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "%s is a PNG", name)
	if *screenshots != "" {
		require.NoError(t, os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644))
	}
}

// axeViolation is one serious or critical finding of axe-core.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAccessible runs the vendored axe-core on the page the tab shows and
// fails on any violation of impact serious or critical.
func checkAccessible(t *testing.T, tab context.Context, what string) {
	t.Helper()
	src, err := os.ReadFile("testdata/axe/axe.min.js")
	require.NoError(t, err)
	loaded, err := chromedp.Run(tab, chromedp.Evaluate[bool](string(src)+"\n;typeof axe === 'object'"))
	require.NoError(t, err, what)
	require.True(t, loaded, "axe-core loads on %s", what)
	raw, err := chromedp.Run(tab, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(
		r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
		 .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" "))}))))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err, what)
	var vs []axeViolation
	require.NoError(t, json.Unmarshal([]byte(raw), &vs))
	require.Empty(t, vs, "axe-core finds serious or critical violations on %s", what)
}

// waitFor polls the page until the JavaScript condition holds, failing
// with what the page shows when it does not within 30 seconds.
func waitFor(t *testing.T, tab context.Context, cond, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	testsignal.Until(t, time.Hour, 100*time.Millisecond, what, func() bool {
		// A navigation in flight fails the evaluation; ask again.
		if ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](cond)); err == nil && ok {
			return true
		}
		if time.Now().After(deadline) {
			page, _ := chromedp.Run(tab, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			t.Fatalf("waiting for %s; the page shows:\n%s", what, page)
		}
		return false
	})
}

// evalString returns what the JavaScript expression js evaluates to.
func evalString(t *testing.T, tab context.Context, js string) string {
	t.Helper()
	s, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
	require.NoError(t, err, js)
	return s
}

// textOf returns the visible text of the first element matching sel,
// once there is one. The element is found and read in one evaluation: a
// page that re-renders between a query and a read (a navigation landing,
// a live region updating) would otherwise leave a stale node id.
func textOf(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	q, err := json.Marshal(sel)
	require.NoError(t, err)
	js := `(() => { const e = document.querySelector(` + string(q) + `); return e ? "+" + e.innerText : "" })()`
	var text string
	waitFor(t, tab, `!!document.querySelector(`+string(q)+`)`, sel)
	testsignal.Until(t, 30*time.Second, 50*time.Millisecond, sel, func() bool {
		s, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
		if err != nil || s == "" { // a navigation in flight: ask again
			return false
		}
		text = s[1:]
		return true
	})
	return text
}

// TestDashboardInABrowser drives the dashboard in headless Chromium
// against a real `visor serve`: an owner signs in, approves an AI
// employee's capability request for eight hours while the employee holds
// an open MCP stream, which hears list_changed; the live-streams page shows
// that stream on its replica; ada's settings are edited with the preview
// (the removed tool shown before saving, list_changed after); a key is
// created (its token shown once) and revoked (refused at once); the audit log is filtered, exported as CSV
// and followed live; the language switches to Japanese. axe-core checks
// every page in both languages.
func TestDashboardInABrowser(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("Chromium is needed at %s: %v", chromiumPath, err)
	}
	srv := privateRedis(t)
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.ids.CreateMember(ctx, w.acme.ID, "owner@acme.test", ownerPassword, identity.RoleOwner)
	require.NoError(t, err)
	scoped := identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: []string{"agent_status"}}}
	_, err = w.ids.UpdateAgent(ctx, w.acme.ID, w.ada.ID, func(ag *identity.Agent) error { ag.Settings = scoped; return nil })
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")

	ada := listenModern(t, r, w.adaKey)
	defer ada.Close()
	reqID := capabilityRequest(t, r, w.adaKey, "agent_status")

	browser := chromium(t)
	tab, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	tab, cancel := context.WithTimeout(tab, 6*time.Minute)
	defer cancel()
	dash := r.base + "/t/acme/dashboard"
	require.NoError(t, chromedp.Do(tab, chromedp.EmulateViewport(1280, 900)))

	// Sign in: the dashboard sends the browser to the sign-in page and back.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash),
		chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "owner@acme.test"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), ownerPassword),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
	))
	waitFor(t, tab, `location.pathname.endsWith("/dashboard/overview") && !!document.querySelector("header .who")`, "the overview after sign-in")
	url, err := chromedp.Run(tab, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, dash+"/overview", url)
	require.Contains(t, textOf(t, tab, "main"), "agent_status", "the overview lists the pending request")
	checkAccessible(t, tab, "overview (en)")
	shoot(t, tab, "overview.en")

	// Approve from the overview, for eight hours (the default lifetime);
	// the employee's open stream hears it.
	require.Equal(t, "8", evalString(t, tab, `document.getElementById("hours-`+reqID+`").value`), "a finite lifetime is the default")
	require.NoError(t, chromedp.Do(tab,
		chromedp.Click(chromedp.CSS(`form[action$="/requests/`+reqID+`/approve"] button.primary`)),
	))
	waitFor(t, tab, `location.pathname.endsWith("/overview") && !!document.querySelector("p.notice")`, "the approval's notice on the overview")
	expectChange(t, ada, 5*time.Second, "approval in the dashboard")
	require.Contains(t, toolNames(t, r, w.adaKey), "agent_status")
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/requests"),
		chromedp.WaitVisible(chromedp.CSS(`#grants`)),
	))
	checkAccessible(t, tab, "requests (en)")
	shoot(t, tab, "requests.en")
	require.Contains(t, textOf(t, tab, "#grants"), "agent_status", "the grant is listed")

	// Edit ada's settings with the preview: found by the agents page's
	// search, denying a tool ada sees shows it as removed before anything
	// is saved; saving tells ada's open stream its list changed.
	seen := toolNames(t, r, w.adaKey)
	victim := ""
	for _, n := range seen {
		if n != "agent_status" && n != "capability_request" {
			victim = n
			break
		}
	}
	require.NotEmpty(t, victim, "ada sees a tool to deny: %v", seen)
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/agents"),
		chromedp.WaitVisible(chromedp.CSS(`#agent-search`)),
		chromedp.SendKeys(chromedp.CSS(`#agent-search`), "ada"),
		chromedp.Click(chromedp.CSS(`form.search button[type=submit]`)),
	))
	waitFor(t, tab, `location.search.includes("q=ada") && !!document.querySelector("#agents a")`, "the agents page searched for ada")
	require.NoError(t, chromedp.Do(tab,
		chromedp.Click(chromedp.Search(`//table[@id="agents"]//a[normalize-space()="ada"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#caps`)),
	))
	// The common capabilities are labelled controls: denying the tool
	// there previews the same change the JSON view would.
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS(`#cap-denied`), victim),
		chromedp.Click(chromedp.CSS(`#caps button[formaction$="/preview"]`)),
	))
	waitFor(t, tab, `!!document.getElementById("preview-h")`, "the controls' preview")
	require.Contains(t, textOf(t, tab, "ul.removed"), victim, "the controls' preview names the tool that disappears")
	require.Equal(t, "false", evalString(t, tab, `String(document.getElementById("advanced").open)`), "the JSON view stays folded")
	checkAccessible(t, tab, "agent capabilities preview (en)")
	require.NoError(t, chromedp.Do(tab,
		chromedp.Click(chromedp.CSS(`#advanced-h`)),
		chromedp.WaitVisible(chromedp.CSS(`#settings`)),
	))
	current, err := chromedp.Run(tab, chromedp.Value(chromedp.CSS(`#settings`)))
	require.NoError(t, err)
	var edited identity.AgentSettings
	require.NoError(t, json.Unmarshal([]byte(current), &edited), current)
	require.Contains(t, edited.Capabilities.DeniedTools, victim, "the JSON view holds what the controls previewed")
	text, err := json.Marshal(edited)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tab,
		chromedp.Clear(chromedp.CSS(`#settings`)),
		chromedp.SendKeys(chromedp.CSS(`#settings`), string(text)),
		chromedp.Click(chromedp.CSS(`#json-editor button[formaction$="/preview"]`)),
	))
	waitFor(t, tab, `!!document.getElementById("preview-h") && document.getElementById("advanced").open`, "the settings preview")
	require.Contains(t, textOf(t, tab, "ul.removed"), victim, "the preview names the tool that disappears")
	require.Contains(t, toolNames(t, r, w.adaKey), victim, "a preview saves nothing")
	checkAccessible(t, tab, "agent settings preview (en)")
	shoot(t, tab, "agent.en")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#json-editor button.primary`))))
	waitFor(t, tab, `location.search.includes("done=settings_saved")`, "the saved settings' notice")
	expectChange(t, ada, 5*time.Second, "settings saved in the dashboard")
	require.NotContains(t, toolNames(t, r, w.adaKey), victim)

	// Edit ada's budget on her page.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/agents/"+w.ada.ID.String()),
		chromedp.WaitVisible(chromedp.CSS(`#profile-h`)),
		chromedp.Click(chromedp.CSS(`#profile-h`)),
		chromedp.WaitVisible(chromedp.CSS(`#p-budget`)),
		chromedp.SetValue(chromedp.CSS(`#p-budget`), "42.50"),
		chromedp.Click(chromedp.CSS(`form[action$="/profile"] button.primary`)),
	))
	waitFor(t, tab, `location.search.includes("done=agent_saved")`, "the saved budget's notice")
	saved, err := w.ids.Agent(ctx, w.acme.ID, w.ada.ID)
	require.NoError(t, err)
	require.EqualValues(t, 4250, saved.BudgetCents, "the budget is saved")
	require.Contains(t, textOf(t, tab, "#spend"), "$0.00 of $42.50 (0%)", "spend against the new budget")

	// Create a key for ada on the keys page: its token is shown once and
	// works on the MCP endpoint; revoked there, it is refused at once.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/keys"),
		chromedp.WaitVisible(chromedp.CSS(`#key-name`)),
		chromedp.SendKeys(chromedp.CSS(`#key-name`), "browser-key"),
		chromedp.Click(chromedp.CSS(`input[name=kind][value=agent]`)),
		chromedp.SendKeys(chromedp.CSS(`#key-agent`), w.ada.Name),
		chromedp.Click(chromedp.CSS(`form[aria-labelledby=new-key] button[type=submit]`)),
	))
	waitFor(t, tab, `!!document.getElementById("token")`, "the new key's token")
	token := strings.TrimSpace(textOf(t, tab, "#token"))
	require.NotEmpty(t, token)
	require.Equal(t, http.StatusOK, mcpStatus(t, r, token, ""), "the new key works")
	// A reload shows the token no more and creates no second key.
	require.NoError(t, chromedp.Do(tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#key-name`))))
	html, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	require.NoError(t, err)
	require.NotContains(t, html, token, "the token is shown only once")
	require.Equal(t, "1", evalString(t, tab, `String([...document.querySelectorAll("main tbody tr td:first-child")].filter(td => td.textContent.trim() === "browser-key").length)`),
		"one key, however often the page is reloaded")
	checkAccessible(t, tab, "keys (en)")
	shoot(t, tab, "keys.en")
	// Revoking asks first; the key works until the member confirms.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Click(chromedp.Search(`//tr[td[1][normalize-space()="browser-key"]]//button[contains(@class, "danger")]`)),
	))
	waitFor(t, tab, `!!document.querySelector("input[name=confirmed][value='1']")`, "the confirmation page")
	require.Contains(t, textOf(t, tab, "main"), "Revoke the key browser-key?")
	checkAccessible(t, tab, "confirm (en)")
	require.Equal(t, http.StatusOK, mcpStatus(t, r, token, ""), "asking revokes nothing")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`main form button.danger`))))
	waitFor(t, tab, `location.search.includes("done=key_revoked")`, "the revocation's notice")
	require.Equal(t, http.StatusUnauthorized, mcpStatus(t, r, token, ""), "the revoked key is refused")

	// The live-streams page shows ada's stream on this replica (replicas
	// report every few seconds).
	testsignal.Until(t, 15*time.Second, 500*time.Millisecond, "ada's stream on the live page", func() bool {
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(dash+"/live"), chromedp.WaitVisible(chromedp.CSS(`h1`))))
		return strings.Contains(textOf(t, tab, "main"), "ada")
	})
	require.Contains(t, textOf(t, tab, "#streams"), ":"+strings.TrimPrefix(r.base[strings.LastIndex(r.base, ":"):], ":"), "named by its replica's port")
	checkAccessible(t, tab, "live streams (en)")
	shoot(t, tab, "live.en")

	// Filter the audit log to the approval by clicking its cell, narrow
	// it to the dashboard in the folded filters, and export it as CSV.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/audit"),
		chromedp.WaitVisible(chromedp.CSS(`#audit-rows`)),
		chromedp.Click(chromedp.Search(`//table[@id="audit-rows"]//a[code[normalize-space()="approveCapabilityRequest"]]`)),
	))
	waitFor(t, tab, `location.search.includes("action=approveCapabilityRequest") && !!document.getElementById("audit-rows")`, "the audit page filtered by a click")
	require.NoError(t, chromedp.Do(tab,
		chromedp.WaitVisible(chromedp.CSS(`#f-source`)), // a chosen filter unfolds the filters
		chromedp.SetValue(chromedp.CSS(`#f-source`), "dashboard"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)),
	))
	waitFor(t, tab, `location.search.includes("source=dashboard") && !!document.getElementById("audit-rows")`, "the filtered audit page")
	rows := textOf(t, tab, "#audit-rows tbody")
	require.Contains(t, rows, "approveCapabilityRequest")
	require.NotContains(t, rows, "capability_request ", "the employee's own call is filtered out")
	checkAccessible(t, tab, "audit log (en)")
	csvText, err := chromedp.Run(tab, chromedp.Evaluate[string](`fetch(document.getElementById("export-csv").href).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(csvText), "\n")
	require.Len(t, lines, 2, "the header and the one approval: %s", csvText)
	require.True(t, strings.HasPrefix(lines[0], "id,at,principal_kind"), "%q", lines[0])
	require.Contains(t, lines[1], "approveCapabilityRequest")

	// The live tail shows a row written after it started.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/audit?tool=agent_status"),
		chromedp.WaitVisible(chromedp.CSS(`#tail-toggle`)),
		chromedp.Click(chromedp.CSS(`#tail-toggle`)),
	))
	// Sleep, not a signal: the tail starts where its EventSource connects,
	// which the page does not report; a row written before that would not
	// show.
	time.Sleep(300 * time.Millisecond)
	callTool(t, r, w.adaKey, "agent_status", map[string]any{})
	require.NoError(t, chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(`#tail-rows tr`))))
	require.Contains(t, textOf(t, tab, "#tail-rows"), "agent_status")
	require.Equal(t, "7 7", evalString(t, tab, `document.querySelectorAll("#tail-rows tr:first-child td").length + " " + document.querySelectorAll("#tail-table thead th").length`),
		"the tail's rows have the table's seven columns")
	require.Contains(t, textOf(t, tab, "#tail-rows tr:first-child td:nth-child(2)"), "ada", "by name")
	// A click on a facet filters by it, and the counts follow.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/audit"),
		chromedp.WaitVisible(chromedp.CSS(`#audit-total`)),
		chromedp.Click(chromedp.Search(`//p[@class="facets"]//a[code[normalize-space()="agent_status"]]`)),
	))
	waitFor(t, tab, `location.search.includes("tool=agent_status") && !!document.getElementById("audit-total")`, "the audit page filtered by a facet")
	facet := textOf(t, tab, "#audit-total")
	require.Regexp(t, `^\d+ rows? match`, facet)
	require.Equal(t, evalString(t, tab, `String(document.querySelectorAll("#audit-rows tbody tr").length)`),
		strings.Fields(facet)[0], "the total counts the filtered rows (fewer than a page here)")
	shoot(t, tab, "audit.en")

	for _, page := range []string{"agents", "tenant", "clients"} {
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(dash+"/"+page), chromedp.WaitVisible(chromedp.CSS(`h1`))))
		checkAccessible(t, tab, page+" (en)")
		shoot(t, tab, page+".en")
	}

	// The member chooses a time zone of their own: every time on their
	// pages, and the audit filters, follow it.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/tenant"),
		chromedp.WaitVisible(chromedp.CSS(`#m-tz`)),
		chromedp.SetValue(chromedp.CSS(`#m-tz`), "Asia/Tokyo"),
		chromedp.Click(chromedp.CSS(`form[action$="/me/time_zone"] button[type=submit]`)),
	))
	waitFor(t, tab, `location.search.includes("done=zone_saved")`, "the saved time zone's notice")
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(dash+"/audit"), chromedp.WaitVisible(chromedp.CSS(`#audit-rows`))))
	require.True(t, strings.HasSuffix(strings.TrimSpace(textOf(t, tab, "#audit-rows tbody tr:first-child td:first-child")), " JST"), "times in the member's zone")
	require.Contains(t, evalString(t, tab, `document.getElementById("time-help").textContent`), "Asia/Tokyo", "the filters say which zone they read")

	// Switch to Japanese: the page, its lang and every other page follow.
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(dash+"/overview"),
		chromedp.WaitVisible(chromedp.CSS(`#lang-menu`)),
		chromedp.SetValue(chromedp.CSS(`#lang-menu`), "ja"),
		chromedp.Click(chromedp.CSS(`footer button[type=submit]`)),
	))
	waitFor(t, tab, `document.documentElement.lang === "ja" && !!document.querySelector("h1")`, "the page in Japanese")
	require.Equal(t, "概要", textOf(t, tab, "h1"))
	for _, page := range []struct{ path, name string }{{"overview", "overview"}, {"agents", "agents"}, {"requests", "requests"}, {"live", "live"},
		{"audit", "audit"}, {"tenant", "tenant"}, {"clients", "clients"}, {"keys", "keys"}, {"agents/" + w.ada.ID.String(), "agent"}} {
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(dash+"/"+page.path), chromedp.WaitVisible(chromedp.CSS(`html[lang=ja] h1`))))
		checkAccessible(t, tab, page.name+" (ja)")
		require.Empty(t, evalString(t, tab, wrappedShortWords), "short words and times on one line on %s (ja)", page.name)
		shoot(t, tab, page.name+".ja")
	}
}

// wrappedShortWords lists, as one string, the headers, times, badges,
// buttons, tabs and cell links of the page whose text (at most 24
// characters: a status word, a time) takes more than one line; text
// moved off the screen for screen readers (class skip) is not shown.
const wrappedShortWords = `[...document.querySelectorAll("th, td.nowrap, .nowrap, .badge, .tabs a, main button, td > a, summary, ul.triage .label")]
	.filter(e => e.offsetParent !== null && e.textContent.trim().length > 0 && e.textContent.trim().length <= 24)
	.filter(e => { const r = document.createRange(); r.selectNodeContents(e);
		const tops = new Set([...r.getClientRects()].filter(x => x.width > 0 && x.right > 0).map(x => Math.round(x.top)));
		return tops.size > 1; })
	.map(e => e.textContent.trim()).join(" | ")`
