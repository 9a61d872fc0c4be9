package ui_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
)

// TestTheAuditLogIsATriageTool: the filters start folded, a time range is
// one click, each cell's value is a link that filters by it, and the page
// counts its rows per outcome, tool and event.
func TestTheAuditLogIsATriageTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "x_a")
	rec := func(tool, outcome string, ago time.Duration) {
		require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee", PrincipalID: "agent:" + ada.ID.String(),
			Tool: tool, Outcome: outcome, Event: "tool_call", At: time.Now().Add(-ago)}))
	}
	rec("x_a", audit.OutcomeRefused, time.Minute)
	rec("x_a", audit.OutcomeRefused, 2*time.Minute)
	rec("x_b", audit.OutcomeOK, 3*time.Minute)
	rec("x_c", audit.OutcomeOK, 3*time.Hour)
	b := e.browser()
	e.signIn(b, identity.RoleOwner)

	page := b.get("/t/acme/dashboard/audit").body
	require.Contains(t, page, `<details><summary id="audit-filters">`, "the filters start folded")
	require.Regexp(t, `Refused <span class="badge">2</span>`, page, "counts per facet")
	link := regexp.MustCompile(`<a href="(/t/acme/dashboard/audit\?tool=x_a)"><code>x_a</code></a>`).FindStringSubmatch(page)
	require.NotNil(t, link, "the tool cell is a filter link")
	only := b.get(html.UnescapeString(link[1])).body
	require.Contains(t, only, `<details open>`, "a chosen filter shows the filters")
	require.Equal(t, 2, strings.Count(only, "<code>x_a</code></a></td>"))
	require.NotContains(t, only, "<code>x_b</code>")

	hour := b.get("/t/acme/dashboard/audit?range=1h")
	require.Equal(t, http.StatusOK, hour.status)
	require.Contains(t, hour.body, "<code>x_b</code>")
	require.NotContains(t, hour.body, "<code>x_c</code>", "older than an hour")
	require.Equal(t, http.StatusBadRequest, b.get("/t/acme/dashboard/audit?range=forever").status)
	who := regexp.MustCompile(`<a class="only" href="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, who)
	require.Contains(t, html.UnescapeString(who[1]), "principal_id=agent%3A"+ada.ID.String())
}
