package e2e

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// BenchmarkDashboardTTFB measures the time to first byte of dashboard
// pages as a signed-in owner sees them, in a tenant with 1,000 AI
// employees and 1,000,000 audit rows: the agents page (its first 50, a
// page deep by keyset, and a search by department), one employee's page
// (keys, grants, requests, tasks, recent calls, spend), the audit page
// (its newest 50 rows with facet counts over every matching row:
// unfiltered, filtered to refusals, the last hour, the last 7 days, the
// refusals of the last day as the overview links them, one employee's
// rows, and three pages back by keyset) and the overview (with its
// triage counts). Each page is fetched 200
// times after 10 warm-up requests, one at a time; b.N is ignored (run with
// -benchtime 1x).
//
//	go test ./cmd/visor/e2e -run '^$' -bench DashboardTTFB -benchtime 1x -timeout 30m
func BenchmarkDashboardTTFB(b *testing.B) {
	const agents, auditRows = 1000, 1_000_000
	const requests = 200
	srv := privateRedis(b)
	w := newWorld(b)
	ctx := context.Background()
	_, err := w.ids.CreateMember(ctx, w.acme.ID, "owner@acme.test", ownerPassword, identity.RoleOwner)
	require.NoError(b, err)
	seeded := time.Now()
	w.seedAgents(b, w.acme.ID, agents)
	w.seedAudit(b, w.acme.ID, auditRows)
	b.Logf("seeded %d agents and %d audit rows in %s", agents, auditRows, time.Since(seeded).Round(time.Second))
	r := startReplica(b, "A", w.dbURL, srv.URL(), "VISOR_LOG_LEVEL=error")
	c := browserSession(b, r, "owner@acme.test", ownerPassword)

	// The third page of the audit log: follow "older" twice.
	third := "/t/acme/dashboard/audit"
	for range 2 {
		body := fetch(b, c, r.base+third)
		m := olderRE.FindStringSubmatch(body)
		require.NotNil(b, m, "the audit page links to older rows")
		third = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	mid, err := w.ids.AgentByName(ctx, w.acme.ID, "agent-00500")
	require.NoError(b, err)
	pages := []struct{ name, path string }{
		{"employee", "/t/acme/dashboard/agents/" + mid.ID.String()},
		{"audit-last-hour", "/t/acme/dashboard/audit?range=1h"},
		{"audit-refused-day", "/t/acme/dashboard/audit?outcome=refused&range=24h"},
		{"audit-week", "/t/acme/dashboard/audit?range=7d"},
		{"audit-one-employee", "/t/acme/dashboard/audit?principal_id=agent%3A500"},
		{"agents-first", "/t/acme/dashboard/agents"},
		{"agents-page-11", "/t/acme/dashboard/agents?after=agent-00500"},
		{"agents-search", "/t/acme/dashboard/agents?q=dept-7"},
		{"audit-newest", "/t/acme/dashboard/audit"},
		{"audit-refused", "/t/acme/dashboard/audit?outcome=refused"},
		{"audit-page-3", third},
		{"overview", "/t/acme/dashboard/overview"},
	}
	b.ResetTimer()
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for range 10 {
				ttfb(b, c, r.base+p.path)
			}
			var ds []time.Duration
			for range requests {
				ds = append(ds, ttfb(b, c, r.base+p.path))
			}
			p50, p99, pmax := percentiles(ds)
			b.ReportMetric(ms(p50), "p50-ms")
			b.ReportMetric(ms(p99), "p99-ms")
			b.ReportMetric(ms(pmax), "max-ms")
			b.Logf("%s: time to first byte over %d requests: p50 %.1f ms, p99 %.1f ms, max %.1f ms", p.name, requests, ms(p50), ms(p99), ms(pmax))
		})
	}
}

var (
	csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	olderRE   = regexp.MustCompile(`id="older" href="([^"]+)"`)
)

// browserSession signs in to acme's dashboard as a browser would and
// returns the client holding the session cookie.
func browserSession(t testing.TB, r *replica, email, password string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(r.base + "/t/acme/login")
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfField.FindStringSubmatch(string(page))
	require.NotNil(t, m, "no CSRF token on the sign-in page")
	form := url.Values{"csrf_token": {html.UnescapeString(m[1])}, "email": {email}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, r.base+"/t/acme/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.base)
	res, err = c.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "sign in as %s", email)
	return c
}

func fetch(t testing.TB, c *http.Client, u string) string {
	t.Helper()
	res, err := c.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", u, body)
	return string(body)
}

// ttfb fetches u and returns the time from sending the request to the
// first byte of the answer; the body is read whole and must be a 200.
func ttfb(t testing.TB, c *http.Client, u string) time.Duration {
	t.Helper()
	var start, first time.Time
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { start = time.Now() },
		GotFirstResponseByte: func() { first = time.Now() }}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, u, nil)
	res, err := c.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, u)
	return first.Sub(start)
}
