package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/api"
	"github.com/visorhq/visor/web/server"
)

const platformToken = "platform-token-0123456789abcdef0123456789"

// stack is a fresh database with the identity service the admin API runs
// on: what a test builds its resources from before the API starts.
type stack struct {
	t        *testing.T
	db       *postgres.DB
	store    *postgres.IdentityStore
	resolver *auth.Resolver
	ids      *identity.Service
	log      *slog.Logger
}

func newStack(t *testing.T) *stack {
	t.Helper()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	log := slog.New(slog.DiscardHandler)
	resolver := auth.NewResolver(store, store, auth.NewURLs("http://visor.test"), log)
	ids := identity.NewService(store, resolver, log) // the resolver hears committed changes
	return &stack{t: t, db: db, store: store, resolver: resolver, ids: ids, log: log}
}

// fixture is a running admin API on a fresh database with tenant acme and
// an operator key of it; withGlobex adds a second tenant.
type fixture struct {
	*stack
	srv      *httptest.Server
	tenant   identity.Tenant // acme
	opKey    string          // an operator key of acme
	globex   identity.Tenant // set by withGlobex
	otherKey string          // an operator key of globex, set by withGlobex
}

// newFixture serves the admin API's own routes, authenticated by the
// resolver.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newStack(t).serve(api.Deps{})
}

// serve starts the admin API with resources behind the real edge
// (web/server's middleware, body limit 64 KiB here, the API's error
// handler) and makes tenant acme with an operator key. deps may set Audit
// and Authenticate (the resolver's admin middleware when nil); serve fills
// in the rest.
func (s *stack) serve(deps api.Deps, resources ...api.Resource) *fixture {
	s.t.Helper()
	deps.Identity, deps.PlatformToken, deps.Logger = s.ids, platformToken, s.log
	if deps.Authenticate == nil {
		deps.Authenticate = s.resolver.AdminMiddleware()
	}
	e := server.New(server.Options{Logger: s.log, BodyLimit: 64 << 10, ErrorHandler: api.ErrorHandler(s.log)}).Echo()
	adm := api.New(deps)
	adm.Add(resources...)
	adm.Register(e)
	srv := httptest.NewServer(e)
	s.t.Cleanup(srv.Close)
	f := &fixture{stack: s, srv: srv}
	f.tenant, f.opKey = f.newTenant("acme", "Acme")
	return f
}

// withGlobex adds tenant globex with an operator key of its own.
func (f *fixture) withGlobex() *fixture {
	f.t.Helper()
	f.globex, f.otherKey = f.newTenant("globex", "Globex")
	return f
}

// newTenant makes a tenant and returns it with an operator key of it.
func (f *fixture) newTenant(slug, name string) (identity.Tenant, string) {
	f.t.Helper()
	tn, err := f.ids.CreateTenant(context.Background(), slug, name)
	require.NoError(f.t, err)
	return tn, f.key(tn, "ops")
}

// key mints an operator key of tn limited to scopes (every scope when none
// is given) and returns its token.
func (f *fixture) key(tn identity.Tenant, name string, scopes ...string) string {
	f.t.Helper()
	_, tok, err := f.ids.CreateKey(context.Background(), tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: name, Scopes: scopes})
	require.NoError(f.t, err)
	return tok
}

// agent adds the employee a to tn.
func (f *fixture) agent(tn identity.Tenant, a identity.NewAgent) identity.Agent {
	f.t.Helper()
	ag, err := f.ids.CreateAgent(context.Background(), tn.ID, a)
	require.NoError(f.t, err)
	return ag
}

// send sends a request with token as its bearer credential (none when
// empty) and returns the answer with its body read.
func (f *fixture) send(method, path, token, body string) (*http.Response, string) {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, r)
	require.NoError(f.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(f.t, err)
	return res, string(b)
}

// do sends a request and decodes a JSON answer into out (when not nil). It
// returns the status and the raw body.
func (f *fixture) do(method, path, token, body string, out any) (int, string) {
	f.t.Helper()
	res, b := f.send(method, path, token, body)
	if out != nil && res.StatusCode < 300 && len(b) > 0 {
		require.NoError(f.t, json.Unmarshal([]byte(b), out), b)
	}
	return res.StatusCode, b
}

// status is do for a check of the status alone.
func (f *fixture) status(method, path, token, body string, out any) int {
	f.t.Helper()
	code, _ := f.do(method, path, token, body, out)
	return code
}

func TestPlatformTokenCreatesTenants(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	var created api.Tenant
	code, body := f.do("POST", "/api/v1/tenants", platformToken, `{"slug":"globex","name":"Globex"}`, &created)
	require.Equal(t, 201, code, body)
	require.Equal(t, "globex", created.Slug)

	var list api.TenantList
	code, _ = f.do("GET", "/api/v1/tenants", platformToken, "", &list)
	require.Equal(t, 200, code)
	require.Len(t, list.Tenants, 2)

	// A tenant's operator key may not create or list tenants.
	code, body = f.do("POST", "/api/v1/tenants", f.opKey, `{"slug":"initech","name":"Initech"}`, nil)
	require.Equal(t, 403, code, body)
	code, _ = f.do("GET", "/api/v1/tenants", f.opKey, "", nil)
	require.Equal(t, 403, code)

	// The platform token acts in any tenant, e.g. to mint its first key.
	var ck api.CreatedKey
	code, body = f.do("POST", "/api/v1/tenants/globex/keys", platformToken, `{"kind":"operator","name":"first"}`, &ck)
	require.Equal(t, 201, code, body)
	code, _ = f.do("GET", "/api/v1/tenants/globex", ck.Token, "", nil)
	require.Equal(t, 200, code)
}

func TestOperatorManagesAgentsSettingsAndKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := "/api/v1/tenants/acme"

	var boss, a api.Agent
	code, body := f.do("POST", base+"/agents", f.opKey, `{"name":"boss","department":"sales"}`, &boss)
	require.Equal(t, 201, code, body)
	code, body = f.do("POST", base+"/agents", f.opKey,
		`{"name":"ava","department":"sales","role":"rep","budget_cents":500,"reports_to":"`+boss.ID.String()+`",
		  "settings":{"capabilities":{"allowed_tools":["memory_*"],"codrive":true},"permissions":{"can_create_agents":false}}}`, &a)
	require.Equal(t, 201, code, body)
	require.Equal(t, boss.ID, *a.ReportsTo)
	require.True(t, a.Settings.Capabilities.Codrive)
	require.False(t, *a.Settings.Permissions.CanCreateAgents)

	var got api.Agent
	code, _ = f.do("GET", base+"/agents/ava", f.opKey, "", &got)
	require.Equal(t, 200, code)
	require.Equal(t, a.ID, got.ID)

	code, body = f.do("PATCH", base+"/agents/"+a.ID.String(), f.opKey, `{"role":"lead","reports_to":null}`, &got)
	require.Equal(t, 200, code, body)
	require.Equal(t, "lead", got.Role)
	require.Nil(t, got.ReportsTo)

	var st api.AgentSettings
	code, _ = f.do("GET", base+"/agents/ava/settings", f.opKey, "", &st)
	require.Equal(t, 200, code)
	v := st.SettingsVersion
	st = api.AgentSettings{}
	code, body = f.do("PUT", base+"/agents/ava/settings", f.opKey,
		`{"settings":{"capabilities":{"computer_use":true}},"settings_version":`+itoa(v)+`}`, &st)
	require.Equal(t, 200, code, body)
	require.True(t, st.Settings.Capabilities.ComputerUse)
	require.Nil(t, st.Settings.Permissions, "PUT replaces the whole document")
	// A stale version is a conflict, not a lost update.
	code, body = f.do("PUT", base+"/agents/ava/settings", f.opKey, `{"settings":{},"settings_version":`+itoa(v)+`}`, nil)
	require.Equal(t, 409, code, body)
	requireError(t, body, "conflict")

	// Keys: an agent key authenticates as the agent, which may not use
	// the admin API; revoking it stops it at once.
	var ck api.CreatedKey
	code, body = f.do("POST", base+"/keys", f.opKey, `{"kind":"agent","agent":"`+a.ID.String()+`","name":"ava key","scopes":["tools:write"]}`, &ck)
	require.Equal(t, 201, code, body)
	require.True(t, strings.HasPrefix(ck.Token, "vsk_"))
	require.Equal(t, []string{"tools:write"}, ck.Key.Scopes)
	code, body = f.do("GET", base+"/agents", ck.Token, "", nil)
	require.Equal(t, 403, code, body)
	var keys api.KeyList
	code, body = f.do("GET", base+"/keys", f.opKey, "", &keys)
	require.Equal(t, 200, code)
	require.Len(t, keys.Keys, 2)
	require.NotContains(t, body, "argon2", "hashes never leave the server")
	var revoked api.Key
	code, _ = f.do("DELETE", base+"/keys/"+ck.Key.ID.String(), f.opKey, "", &revoked)
	require.Equal(t, 200, code)
	require.NotNil(t, revoked.RevokedAt)
	code, _ = f.do("GET", base+"/agents", ck.Token, "", nil)
	require.Equal(t, 401, code)

	// Trash, restore, trash, purge.
	code, _ = f.do("DELETE", base+"/agents/ava", f.opKey, "", nil)
	require.Equal(t, 409, code, "only a trashed agent can be purged")
	code, _ = f.do("POST", base+"/agents/ava/trash", f.opKey, "", &got)
	require.Equal(t, 200, code)
	require.Equal(t, identity.AgentTrashed, got.Status)
	code, _ = f.do("POST", base+"/agents/ava/restore", f.opKey, "", &got)
	require.Equal(t, 200, code)
	require.Equal(t, identity.AgentActive, got.Status)
	f.do("POST", base+"/agents/ava/trash", f.opKey, "", nil)
	code, _ = f.do("DELETE", base+"/agents/ava", f.opKey, "", nil)
	require.Equal(t, 204, code)
	code, _ = f.do("GET", base+"/agents/ava", f.opKey, "", nil)
	require.Equal(t, 404, code)
}

func TestMembersAndTenantSettings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := "/api/v1/tenants/acme"

	var owner, viewer api.Member
	code, body := f.do("POST", base+"/members", f.opKey, `{"email":"Olga@Example.com","password":"correct horse battery","role":"owner"}`, &owner)
	require.Equal(t, 201, code, body)
	require.Equal(t, "olga@example.com", owner.Email)
	require.NotContains(t, body, "password")
	code, _ = f.do("POST", base+"/members", f.opKey, `{"email":"vic@example.com","password":"correct horse battery","role":"viewer"}`, &viewer)
	require.Equal(t, 201, code)

	// The last owner cannot be demoted or removed.
	code, body = f.do("PATCH", base+"/members/"+owner.ID.String(), f.opKey, `{"role":"viewer"}`, nil)
	require.Equal(t, 409, code, body)
	code, _ = f.do("DELETE", base+"/members/"+owner.ID.String(), f.opKey, "", nil)
	require.Equal(t, 409, code)
	code, body = f.do("PATCH", base+"/members/"+viewer.ID.String(), f.opKey, `{"role":"admin","password":"another long password"}`, &viewer)
	require.Equal(t, 200, code, body)
	require.Equal(t, identity.RoleAdmin, viewer.Role)
	_, err := f.ids.Authenticate(context.Background(), f.tenant.ID, "vic@example.com", "another long password")
	require.NoError(t, err)
	code, _ = f.do("DELETE", base+"/members/"+viewer.ID.String(), f.opKey, "", nil)
	require.Equal(t, 204, code)

	var tn api.Tenant
	code, body = f.do("PATCH", base, f.opKey, `{"name":"Acme Corp","settings":{"responsibilities":true,"odoo":{"crm":true}}}`, &tn)
	require.Equal(t, 200, code, body)
	require.Equal(t, "Acme Corp", tn.Name)
	require.True(t, tn.Settings.Responsibilities)
	require.True(t, tn.Settings.Odoo.CRM)
}

func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	f := newFixture(t).withGlobex()
	secret := f.agent(f.globex, identity.NewAgent{Name: "secret"})

	// acme's key against globex's routes: not a globex credential.
	code, body := f.do("GET", "/api/v1/tenants/globex/agents", f.opKey, "", nil)
	require.Equal(t, 401, code, body)
	// globex's agent id under acme's routes: not found, like a missing one.
	code, _ = f.do("GET", "/api/v1/tenants/acme/agents/"+secret.ID.String(), f.opKey, "", nil)
	require.Equal(t, 404, code)
	code, _ = f.do("POST", "/api/v1/tenants/acme/agents/"+secret.ID.String()+"/trash", f.opKey, "", nil)
	require.Equal(t, 404, code)
	code, _ = f.do("POST", "/api/v1/tenants/acme/keys", f.opKey, `{"kind":"agent","agent":"`+secret.ID.String()+`","name":"x"}`, nil)
	require.Equal(t, 404, code)
}

// TestClientMistakesAreFourHundreds: every malformed request gets a 4xx
// with the error shape, never a 500.
func TestClientMistakesAreFourHundreds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := "/api/v1/tenants/acme"
	cases := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"no credential", "GET", base + "/agents", "", "", 401, "unauthenticated"},
		{"garbage token", "GET", base + "/agents", "nope", "", 401, "unauthenticated"},
		{"malformed key", "GET", base + "/agents", "vsk_zz", "", 401, "unauthenticated"},
		{"unknown tenant", "GET", "/api/v1/tenants/nobody-here/agents", f.opKey, "", 404, "not_found"},
		{"bad slug", "GET", "/api/v1/tenants/NO%20SUCH/agents", f.opKey, "", 404, "not_found"},
		{"not json", "POST", base + "/agents", f.opKey, `{"name":`, 400, "invalid_argument"},
		{"empty body", "POST", base + "/agents", f.opKey, "", 400, "invalid_argument"},
		{"two objects", "POST", base + "/agents", f.opKey, `{"name":"a"}{"name":"b"}`, 400, "invalid_argument"},
		{"unknown field", "POST", base + "/agents", f.opKey, `{"name":"a","nmae":"b"}`, 400, "invalid_argument"},
		{"wrong type", "POST", base + "/agents", f.opKey, `{"name":42}`, 400, "invalid_argument"},
		{"bad uuid", "POST", base + "/agents", f.opKey, `{"name":"a","reports_to":"not-a-uuid"}`, 400, "invalid_argument"},
		{"bad agent name", "POST", base + "/agents", f.opKey, `{"name":"Not Valid!"}`, 400, "invalid_argument"},
		{"unknown manager", "POST", base + "/agents", f.opKey, `{"name":"a","reports_to":"00000000-0000-0000-0000-000000000001"}`, 400, "invalid_argument"},
		{"negative budget", "POST", base + "/agents", f.opKey, `{"name":"a","budget_cents":-1}`, 400, "invalid_argument"},
		{"huge list", "POST", base + "/agents", f.opKey, `{"name":"a","settings":{"capabilities":{"allowed_tools":[` + strings.Repeat(`"x",`, 300) + `"x"]}}}`, 400, "invalid_argument"},
		{"unknown agent", "GET", base + "/agents/ghost", f.opKey, "", 404, "not_found"},
		{"NUL in the path", "GET", base + "/agents/%00%01", f.opKey, "", 400, "invalid_argument"},
		{"NUL in a query parameter", "GET", base + "/agents?cursor=%00", f.opKey, "", 400, "invalid_argument"},
		{"NUL escape in the body", "POST", base + "/agents", f.opKey, `{"name":"a\u0000"}`, 400, "invalid_argument"},
		{"invalid UTF-8 in the body", "POST", base + "/agents", f.opKey, "{\"name\":\"\xff\"}", 400, "invalid_argument"},
		{"bad member id", "GET", base + "/members/123", f.opKey, "", 404, "not_found"},
		{"bad email", "POST", base + "/members", f.opKey, `{"email":"nope","password":"long enough pw","role":"owner"}`, 400, "invalid_argument"},
		{"bad role", "POST", base + "/members", f.opKey, `{"email":"a@b.co","password":"long enough pw","role":"god"}`, 400, "invalid_argument"},
		{"short password", "POST", base + "/members", f.opKey, `{"email":"a@b.co","password":"x","role":"owner"}`, 400, "invalid_argument"},
		{"bad key kind", "POST", base + "/keys", f.opKey, `{"kind":"root","name":"k"}`, 400, "invalid_argument"},
		{"unknown scope", "POST", base + "/keys", f.opKey, `{"kind":"operator","name":"k","scopes":["everything"]}`, 400, "invalid_argument"},
		{"past expiry", "POST", base + "/keys", f.opKey, `{"kind":"operator","name":"k","expires_at":"2001-01-01T00:00:00Z"}`, 400, "invalid_argument"},
		{"bad time", "POST", base + "/keys", f.opKey, `{"kind":"operator","name":"k","expires_at":"tomorrow"}`, 400, "invalid_argument"},
		{"unknown key", "DELETE", base + "/keys/00000000-0000-0000-0000-000000000001", f.opKey, "", 404, "not_found"},
		{"bad tenant settings", "PATCH", base, f.opKey, `{"settings":{"script_when_unavailable":"yolo"}}`, 400, "invalid_argument"},
		{"duplicate tenant", "POST", "/api/v1/tenants", platformToken, `{"slug":"acme","name":"Again"}`, 409, "conflict"},
		{"bad tenant slug", "POST", "/api/v1/tenants", platformToken, `{"slug":"A","name":"x"}`, 400, "invalid_argument"},
		{"unknown route", "GET", "/api/v1/nothing", f.opKey, "", 404, "not_found"},
		{"wrong method", "PUT", base + "/keys", f.opKey, `{}`, 405, "not_found"},
		{"too large", "POST", base + "/agents", f.opKey, `{"name":"` + strings.Repeat("a", 100<<10) + `"}`, 413, "too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := f.do(c.method, c.path, c.token, c.body, nil)
			require.Equal(t, c.status, code, body)
			requireError(t, body, c.code)
		})
	}
	// Duplicate agent names conflict.
	f.do("POST", base+"/agents", f.opKey, `{"name":"dup"}`, nil)
	code, body := f.do("POST", base+"/agents", f.opKey, `{"name":"dup"}`, nil)
	require.Equal(t, 409, code, body)
	requireError(t, body, "conflict")
}

func requireError(t *testing.T, body, code string) {
	t.Helper()
	var e api.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, code, e.Error.Code, body)
	require.NotEmpty(t, e.Error.Message)
}

// TestMemberSessionsAreAuthorizedByRole uses a stand-in for the session
// cookie resolver: a viewer may read, not write; an operator may manage
// agents but not members or settings; an admin may manage members but not
// owners.
func TestMemberSessionsAreAuthorizedByRole(t *testing.T) {
	t.Parallel()
	var f *fixture
	asMember := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			m, err := f.ids.MemberByEmail(c.Request().Context(), f.tenant.ID, c.Request().Header.Get("X-Test-Member"))
			if err != nil {
				return err
			}
			p := identity.Principal{TenantID: f.tenant.ID, TenantSlug: f.tenant.Slug, Kind: identity.KindOperator, MemberID: m.ID,
				Role: m.Role, Scopes: m.Role.Scopes(), CredentialID: "session:test"}
			ctx := identity.WithPrincipal(auth.WithTenant(c.Request().Context(), f.tenant), p)
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
	f = newStack(t).serve(api.Deps{Authenticate: asMember})
	ctx := context.Background()
	for _, r := range []identity.Role{identity.RoleViewer, identity.RoleOperator, identity.RoleAdmin} {
		_, err := f.ids.CreateMember(ctx, f.tenant.ID, string(r)+"@example.com", "long enough pw", r)
		require.NoError(t, err)
	}
	as := func(role, method, path, body string) int {
		req, _ := http.NewRequest(method, f.srv.URL+path, bytes.NewBufferString(body))
		req.Header.Set("X-Test-Member", role+"@example.com")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	base := "/api/v1/tenants/acme"
	require.Equal(t, 200, as("viewer", "GET", base+"/agents", ""))
	require.Equal(t, 403, as("viewer", "POST", base+"/agents", `{"name":"v"}`))
	require.Equal(t, 201, as("operator", "POST", base+"/agents", `{"name":"o"}`))
	require.Equal(t, 403, as("operator", "POST", base+"/members", `{"email":"x@example.com","password":"long enough pw","role":"viewer"}`))
	require.Equal(t, 403, as("operator", "PATCH", base, `{"name":"Op Corp"}`))
	require.Equal(t, 201, as("admin", "POST", base+"/members", `{"email":"x@example.com","password":"long enough pw","role":"viewer"}`))
	require.Equal(t, 403, as("admin", "POST", base+"/members", `{"email":"y@example.com","password":"long enough pw","role":"owner"}`))
	require.Equal(t, 200, as("admin", "PATCH", base, `{"name":"Admin Corp"}`))
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestListsPageAndAgentsAreNamedAlike: a list walked with limit and
// next_cursor returns every item once; a cursor the API did not issue and
// a bad limit are 400s; and a request body names an agent by id or by name
// exactly as a path does (reports_to, a key's agent), a name that matches
// no agent being the caller's mistake.
func TestListsPageAndAgentsAreNamedAlike(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := "/api/v1/tenants/acme"
	var boss api.Agent
	code, body := f.do("POST", base+"/agents", f.opKey, `{"name":"boss"}`, &boss)
	require.Equal(t, 201, code, body)
	for _, n := range []string{"cleo", "ava", "dan"} {
		code, body := f.do("POST", base+"/agents", f.opKey, `{"name":"`+n+`","reports_to":"boss"}`, nil)
		require.Equal(t, 201, code, body)
	}

	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		var list api.AgentList
		code, body := f.do("GET", base+"/agents?limit=3&cursor="+cursor, f.opKey, "", &list)
		require.Equal(t, 200, code, body)
		for _, a := range list.Agents {
			seen = append(seen, a.Name)
			if a.Name != "boss" {
				require.Equal(t, boss.ID, *a.ReportsTo, "reports_to by name")
			}
		}
		if list.NextCursor == "" {
			break
		}
		cursor = list.NextCursor
	}
	require.Equal(t, []string{"ava", "boss", "cleo", "dan"}, seen, "every agent once, by name")
	for _, q := range []string{"cursor=bogus!", "limit=0", "limit=501"} {
		code, body := f.do("GET", base+"/agents?"+q, f.opKey, "", nil)
		require.Equal(t, 400, code, q)
		requireError(t, body, "invalid_argument")
	}
	var keys api.KeyList
	code, _ = f.do("GET", base+"/keys?limit=1", f.opKey, "", &keys)
	require.Equal(t, 200, code)
	require.Len(t, keys.Keys, 1)
	require.Empty(t, keys.NextCursor, "one key (the fixture's): the last page")

	var ck api.CreatedKey
	code, body = f.do("POST", base+"/keys", f.opKey, `{"kind":"agent","agent":"ava","name":"ava key","scopes":["tools:read"]}`, &ck)
	require.Equal(t, 201, code, body)
	ava, err := f.ids.AgentByName(context.Background(), f.tenant.ID, "ava")
	require.NoError(t, err)
	require.Equal(t, ava.ID, *ck.Key.AgentID)

	code, body = f.do("PATCH", base+"/agents/ava", f.opKey, `{"reports_to":"dan"}`, nil)
	require.Equal(t, 200, code, body)
	code, body = f.do("PATCH", base+"/agents/ava", f.opKey, `{"reports_to":null}`, nil)
	require.Equal(t, 200, code, body)
	for _, req := range [][2]string{
		{"POST " + base + "/keys", `{"kind":"agent","agent":"nobody","name":"k"}`},
		{"PATCH " + base + "/agents/ava", `{"reports_to":"nobody"}`},
		{"POST " + base + "/agents", `{"name":"eve","reports_to":"nobody"}`},
	} {
		method, path, _ := strings.Cut(req[0], " ")
		code, body := f.do(method, path, f.opKey, req[1], nil)
		require.Equal(t, 400, code, "%s %s", req[0], body)
		require.Contains(t, body, "names no agent of this tenant")
	}
}
