package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

const chromiumPath = "/usr/bin/chromium"

// browserResult is what testdata/browser_client.html reports.
type browserResult struct {
	AnonStatus    int      `json:"anonStatus"`
	Challenge     string   `json:"challenge"`
	InitStatus    int      `json:"initStatus"`
	Session       string   `json:"session"`
	ServerVersion string   `json:"serverVersion"`
	Tools         []string `json:"tools"`
	DeleteStatus  int      `json:"deleteStatus"`
	Error         string   `json:"error"`
}

// TestBrowserClient drives the MCP endpoint from a page in headless
// Chromium, as a browser-based MCP client would: the page at an allowed
// origin reads the 401 challenge, opens a session (reading Mcp-Session-Id),
// lists tools and deletes the session, all through CORS; the same page at
// an origin that is not allowed gets nothing.
func TestBrowserClient(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		pgtest.Unavailable(t, "Chromium", err)
	}
	page, err := os.ReadFile("testdata/browser_client.html")
	require.NoError(t, err)
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	t.Cleanup(pages.Close)
	port := mustURL(t, pages.URL).Port()
	allowed := "http://app.test:" + port

	w := newWorld(t)
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL(), "VISOR_MCP_ALLOWED_ORIGINS="+allowed)
	query := "?" + url.Values{"mcp": {r.base + "/t/acme/mcp"}, "token": {w.operator}}.Encode()

	ctx := chromium(t)
	res := runPage(t, ctx, allowed+"/client.html"+query)
	require.Empty(t, res.Error)
	require.Equal(t, http.StatusUnauthorized, res.AnonStatus)
	require.Contains(t, res.Challenge, `resource_metadata="`+r.base+"/.well-known/oauth-protected-resource/t/acme/mcp")
	require.Equal(t, http.StatusOK, res.InitStatus)
	require.NotEmpty(t, res.Session, "the page can read Mcp-Session-Id")
	require.NotEmpty(t, res.ServerVersion)
	require.Contains(t, res.Tools, "agent_status")
	require.Equal(t, http.StatusNoContent, res.DeleteStatus)

	res = runPage(t, ctx, "http://evil.test:"+port+"/client.html"+query)
	require.Contains(t, res.Error, "Failed to fetch", "an origin that is not allowed reads nothing: %+v", res)
	require.Zero(t, res.AnonStatus)
}

// chromium starts headless Chromium for the test; app.test and evil.test
// resolve to the loopback address.
func chromium(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("host-resolver-rules", "MAP app.test 127.0.0.1, MAP evil.test 127.0.0.1"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, on a context without a timeout
		pgtest.Unavailable(t, "Chromium", err)
	}
	return ctx
}

// runPage loads u in a new tab and waits for the page's result.
func runPage(t *testing.T, browser context.Context, u string) browserResult {
	t.Helper()
	tab, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	require.NoError(t, chromedp.Do(tab), "open a tab")
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u)), u)
	raw, err := chromedp.Run(ctx, chromedp.Poll[string]("window.result"))
	require.NoError(t, err, u)
	var res browserResult
	require.NoError(t, json.Unmarshal([]byte(raw), &res), raw)
	return res
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err, fmt.Sprint(raw))
	return u
}
