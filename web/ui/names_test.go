package ui_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/sandbox"
)

var (
	uuidRE = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// Markup a reader does not read as text, and the fields that show an
	// id on purpose (class "id").
	hiddenRE = regexp.MustCompile(`(?is)<script.*?</script>|<style.*?</style>|<code class="id">.*?</code>|<[^>]+>`)
)

// visibleUUIDs returns the ids a reader sees in page: those in text
// nodes, outside an id field. Attributes (links, form values) may hold ids.
func visibleUUIDs(page string) []string {
	return uuidRE.FindAllString(hiddenRE.ReplaceAllString(page, " "), -1)
}

// TestPagesShowNamesNotIDs renders every dashboard page, in both
// languages, over a tenant where employees, members, keys and OAuth
// clients have acted (audit rows, decided requests, grants, tasks with
// activity, script runs) and fails on any raw id a reader would see:
// people and things are shown by name (email, key name, title) and link
// to their page, and an unassigned task says so.
func TestPagesShowNamesNotIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "os_click", "plain_status")
	owner := e.members[identity.RoleOwner]
	key, _, err := e.ids.CreateKey(ctx, e.a.ID, identity.NewKey{Name: "ci-deployer", Kind: identity.KeyOperator, Scopes: identity.RoleOwner.Scopes()})
	require.NoError(t, err)
	member := "member:" + owner.ID.String()
	for _, who := range []string{"agent:" + ada.ID.String(), member, "operator:key:" + key.ID.String(), "client:claude-desktop/" + member, "agent:" + uuid.NewString()} {
		require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee", PrincipalID: who,
			Tool: "os_click", Outcome: audit.OutcomeRefused, Event: "permission_denied", At: time.Now()}))
	}
	e.request(ada, "os_click") // pending
	req := e.request(ada, "plain_status")
	_, _, err = e.grants.Approve(ctx, e.a.ID, req.ID, grants.Approval{By: member, TTL: time.Hour})
	require.NoError(t, err)

	goal := e.task(board.NewTask{Kind: board.KindGoal, Title: "Ship the spring catalogue"})
	open := e.task(board.NewTask{Kind: board.KindTask, Title: "Nobody has this yet", Parent: goal.ID, ParentGiven: true})
	mine := e.task(board.NewTask{Kind: board.KindTask, Title: "Ada's report", Assignee: ada.ID})
	require.NoError(t, e.runs.StartRun(ctx, sandbox.Run{TenantID: e.a.ID, ID: uuid.New(), Principal: "agent:" + ada.ID.String(), AgentID: ada.ID,
		Image: "visor-sandbox", Language: sandbox.Shell, StartedAt: time.Now()}))
	require.NoError(t, e.runs.StartRun(ctx, sandbox.Run{TenantID: e.a.ID, ID: uuid.New(), Principal: "key:" + key.ID.String(),
		Image: "visor-sandbox", Language: sandbox.Python, StartedAt: time.Now()}))

	pages := []string{"overview", "agents", "agents/" + ada.ID.String(), "requests", "board", "board/" + goal.ID.String(),
		"board/" + open.ID.String(), "board/" + mine.ID.String(), "responsibilities", "questions", "sandbox", "computer", "keys",
		"members", "live", "clients", "tenant", "audit", "audit?principal_id=agent:" + ada.ID.String()}
	for _, lang := range []string{"en", "ja"} {
		b := e.browser()
		e.signIn(b, identity.RoleOwner)
		for _, p := range pages {
			res := b.get("/t/acme/dashboard/"+p, "Accept-Language", lang)
			require.Equal(t, http.StatusOK, res.status, "%s: %s", p, res.body)
			require.Empty(t, visibleUUIDs(res.body), "%s (%s) shows raw ids", p, lang)
		}
		audit := b.get("/t/acme/dashboard/audit", "Accept-Language", lang).body
		for _, name := range []string{"ada", owner.Email, "ci-deployer"} {
			require.Contains(t, audit, ">"+name+"</a>", "the audit log names %s and links it (%s)", name, lang)
		}
		require.Contains(t, b.get("/t/acme/dashboard/board/"+open.ID.String(), "Accept-Language", lang).body,
			map[string]string{"en": "Unassigned", "ja": "未割り当て"}[lang])
		reqs := b.get("/t/acme/dashboard/requests", "Accept-Language", lang).body
		require.True(t, strings.Contains(reqs, `href="/t/acme/dashboard/members">`+owner.Email+`</a>`), "granted and decided by the member's email")
	}
}
