package ui_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

var (
	agentRowRE   = regexp.MustCompile(`<tr><td><a href="/t/acme/dashboard/agents/[0-9a-f-]+">([^<]+)</a>`)
	agentsNextRE = regexp.MustCompile(`<a id="next" rel="next" href="([^"]+)"`)
)

// agentNames returns the names the agents page lists, in order.
func agentNames(body string) []string {
	var out []string
	for _, m := range agentRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestAgentsPageIsPagedAndSearchable: the agents page shows 50 AI
// employees at a time by name and links to the next page by the last name
// shown, so walking every page lists each agent once; the search narrows
// the list by name, department or role and keeps the paging; a manager is
// named by the form; bad cursors and searches are refused with a clear
// message; another tenant's agents never appear.
func TestAgentsPageIsPagedAndSearchable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	boss := e.agent("boss")
	for i := range 119 {
		dept := "sales"
		if i%2 == 0 {
			dept = "Research"
		}
		_, err := e.ids.CreateAgent(ctx, e.a.ID, identity.NewAgent{Name: fmt.Sprintf("a-%03d", i), Department: dept, ReportsTo: boss.ID})
		require.NoError(t, err)
	}
	_, err := e.ids.CreateAgent(ctx, e.b.ID, identity.NewAgent{Name: "a-globex"})
	require.NoError(t, err)
	b := e.browser()
	e.signIn(b, identity.RoleViewer)

	var seen []string
	path := "/t/acme/dashboard/agents"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4, "the pages end")
		p := b.get(path)
		require.Equal(t, http.StatusOK, p.status, p.body)
		names := agentNames(p.body)
		require.LessOrEqual(t, len(names), 50)
		require.Contains(t, p.body, "120 AI employees")
		if pages == 0 {
			require.Equal(t, "a-000", names[0])
			require.Contains(t, p.body, "<td>boss</td>", "the manager is named")
			require.NotContains(t, p.body, ">First page<")
		} else {
			require.Contains(t, p.body, ">First page<")
		}
		seen = append(seen, names...)
		m := agentsNextRE.FindStringSubmatch(p.body)
		if m == nil {
			break
		}
		path = html.UnescapeString(m[1])
	}
	require.Len(t, seen, 120, "every agent once")
	require.Equal(t, "boss", seen[119])
	require.NotContains(t, seen, "a-globex")

	// The search matches the department, case folded, and pages too.
	p := b.get("/t/acme/dashboard/agents?q=research")
	require.Equal(t, http.StatusOK, p.status)
	require.Len(t, agentNames(p.body), 50)
	require.Contains(t, p.body, "60 AI employees match “research”")
	next := html.UnescapeString(agentsNextRE.FindStringSubmatch(p.body)[1])
	require.Contains(t, next, "q=research")
	p = b.get(next)
	require.Len(t, agentNames(p.body), 10)
	require.Nil(t, agentsNextRE.FindStringSubmatch(p.body))
	p = b.get("/t/acme/dashboard/agents?q=" + url.QueryEscape("a-01"))
	require.Len(t, agentNames(p.body), 10, "a-010 … a-019")
	p = b.get("/t/acme/dashboard/agents?q=globex")
	require.Empty(t, agentNames(p.body))
	require.Contains(t, p.body, "No AI employee matches.")

	for _, bad := range []string{"after=" + url.QueryEscape("Not A Name"), "q=" + strings.Repeat("x", 101), "q=%00"} {
		p := b.get("/t/acme/dashboard/agents?" + bad)
		require.Equal(t, http.StatusBadRequest, p.status, bad)
	}

	// The form names the new agent's manager.
	o := e.browser()
	e.signIn(o, identity.RoleOwner)
	res := o.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/agents", url.Values{"name": {"newbie"}, "reports_to": {"boss"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	got, err := e.store.AgentByName(ctx, e.a.ID, "newbie")
	require.NoError(t, err)
	require.Equal(t, boss.ID, got.ReportsTo)
	res = o.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/agents", url.Values{"name": {"orphan"}, "reports_to": {"a-globex"}})
	require.Equal(t, http.StatusBadRequest, res.status)
	require.Contains(t, res.body, "there is none named")
}
