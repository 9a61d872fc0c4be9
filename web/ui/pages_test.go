package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// streamList is a live.Directory holding whatever the test sets.
type streamList struct {
	mu sync.Mutex
	m  map[uuid.UUID][]live.Connection
}

func (s *streamList) set(tenantID uuid.UUID, cs ...live.Connection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[uuid.UUID][]live.Connection{}
	}
	s.m[tenantID] = cs
}

func (s *streamList) Connected(_ context.Context, tenantID uuid.UUID) ([]live.Connection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[tenantID], nil
}

// request has agent a (which may ask for tool) ask for it.
func (e *env) request(a identity.Agent, tool string) grants.Request {
	e.t.Helper()
	r, err := e.grants.Ask(context.Background(), identity.Principal{TenantID: e.a.ID, Kind: identity.KindEmployee, AgentID: a.ID}, tool, "to finish the report")
	require.NoError(e.t, err)
	return r
}

func (e *env) scopedAgent(name string, tools ...string) identity.Agent {
	e.t.Helper()
	a, err := e.ids.CreateAgent(context.Background(), e.a.ID, identity.NewAgent{Name: name,
		Settings: identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: tools}}})
	require.NoError(e.t, err)
	return a
}

// TestPagesByRole walks the pages and their actions with a member of each
// role: every role reads every page; an action the role may not take is
// neither offered on the page nor let through when posted anyway (403 and
// a refused audit row); one it may take is done.
func TestPagesByRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "os_click", "recording_start", "plain_status", "x_a", "x_b", "x_c")
	e.streams.set(e.a.ID, live.Connection{Replica: "host-a:8080", Kind: identity.KindEmployee, AgentID: ada.ID, CredentialID: "key:1", Opened: time.Now()})
	e.streams.set(e.b.ID, live.Connection{Replica: "host-b:8080", Kind: identity.KindOperator, CredentialID: "key:globex", Opened: time.Now()})
	require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee", PrincipalID: "agent:" + ada.ID.String(),
		Tool: "os_click", Outcome: audit.OutcomeRefused, Event: "permission_denied", At: time.Now()}))
	require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.b.ID, PrincipalKind: "employee", PrincipalID: "agent:globex-secret",
		Tool: "os_click", Outcome: audit.OutcomeRefused, Event: "permission_denied", At: time.Now()}))

	e.request(ada, "os_click") // stays pending throughout

	pages := []struct {
		path, shows string
	}{
		{"overview", "os_click"}, {"requests", "ada"}, {"live", "host-a:8080"}, {"clients", "consents"}, {"tenant", "Acme"},
		{"audit", "permission_denied"}, {"audit?outcome=refused&tool=os_click", `/agents/` + ada.ID.String() + `">ada</a>`},
	}
	// offers: the mark of each action on its page, and whether each role
	// may take it.
	type offer struct {
		page, mark string
		may        map[identity.Role]bool
	}
	runners := map[identity.Role]bool{identity.RoleOwner: true, identity.RoleAdmin: true, identity.RoleOperator: true}
	admins := map[identity.Role]bool{identity.RoleOwner: true, identity.RoleAdmin: true}
	offers := map[string]offer{
		"approve":  {"requests", "/approve\"", runners},
		"deny":     {"requests", "/deny\"", runners},
		"revoke":   {"requests", "/revoke\"", runners},
		"settings": {"tenant", "name=\"google_workspace\" type=\"checkbox\">", admins},
	}
	tools := map[identity.Role]string{identity.RoleOwner: "x_a", identity.RoleAdmin: "x_b", identity.RoleOperator: "x_c", identity.RoleViewer: "recording_start"}

	for _, role := range []identity.Role{identity.RoleOwner, identity.RoleAdmin, identity.RoleOperator, identity.RoleViewer} {
		t.Run(string(role), func(t *testing.T) {
			b := e.browser()
			e.signIn(b, role)
			for _, p := range pages {
				got := b.get("/t/acme/dashboard/" + p.path)
				require.Equal(t, http.StatusOK, got.status, "%s as %s: %s", p.path, role, got.body)
				require.True(t, strings.Contains(got.body, p.shows), "%s as %s does not show %q", p.path, role, p.shows)
				require.False(t, strings.Contains(got.body, "globex"), "%s as %s shows another tenant's data", p.path, role)
			}

			// Each role decides on a request of its own, and a grant.
			req := e.request(ada, tools[role])
			g, err := e.grants.Grant(ctx, e.a.ID, ada.ID, "plain_status_"+string(role), uuid.Nil, 0, "test")
			require.NoError(t, err)
			_ = g
			for name, o := range offers {
				got := b.get("/t/acme/dashboard/" + o.page)
				require.Equal(t, o.may[role], strings.Contains(got.body, o.mark), "%s offered to %s", name, role)
			}
			approve := b.submit("/t/acme/dashboard/requests", "/t/acme/dashboard/requests/"+req.ID.String()+"/approve", url.Values{"hours": {"8"}})
			settings := b.submit("/t/acme/dashboard/tenant", "/t/acme/dashboard/tenant", url.Values{"name": {"Acme"}, "github": {"on"}})
			revoke := b.submit("/t/acme/dashboard/requests", "/t/acme/dashboard/grants/"+g.ID.String()+"/revoke", nil)
			for name, res := range map[string]page{"approve": approve, "settings": settings, "revoke": revoke} {
				if offers[name].may[role] {
					require.Equal(t, http.StatusSeeOther, res.status, "%s as %s: %s", name, role, res.body)
				} else {
					require.Equal(t, http.StatusForbidden, res.status, "%s as %s: %s", name, role, res.body)
				}
			}
			r, err := e.grants.Request(ctx, e.a.ID, req.ID)
			require.NoError(t, err)
			if runners[role] {
				require.Equal(t, grants.Approved, r.Status)
				live, err := e.grants.ListGrants(ctx, e.a.ID, ada.ID, true)
				require.NoError(t, err)
				found := false
				for _, lg := range live {
					if lg.RequestID == req.ID {
						found = true
						require.NotNil(t, lg.ExpiresAt, "approved for 8 hours")
						require.WithinDuration(t, time.Now().Add(8*time.Hour), *lg.ExpiresAt, time.Minute)
					}
				}
				require.True(t, found)
			} else {
				require.Equal(t, grants.Pending, r.Status, "a refused approval changes nothing")
			}
		})
	}
	refused := 0
	for _, op := range []string{"approveCapabilityRequest", "revokeGrant", "updateTenant"} {
		for _, r := range e.rows(op) {
			if r.Outcome == audit.OutcomeRefused {
				refused++
			}
		}
	}
	require.Equal(t, 4, refused, "each refusal is audited: the viewer's approval, revocation and settings change, and the operator's settings change")
}
