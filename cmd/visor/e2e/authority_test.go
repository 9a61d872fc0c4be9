package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

const (
	platformToken = "e2e-platform-token-0123456789abcdef0123"
	memberPW      = "correct horse battery"
)

// caller is one way to call the admin API: a bearer token or a member's
// signed-in browser.
type caller struct {
	token   string
	browser *http.Client
}

// adminCall sends one admin API request as c and returns the status and body.
func adminCall(t testing.TB, r *replica, c caller, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.base+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := http.DefaultClient
	switch {
	case c.browser != nil:
		client = c.browser
		req.Header.Set("Origin", r.base)
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// signIn signs a member of acme in through the sign-in form and returns
// the browser holding the session.
func signIn(t *testing.T, r *replica, email, password string) caller {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := b.Get(r.base + "/t/acme/login")
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	form := url.Values{"csrf_token": {oauthField(t, "csrf_token", string(page))}, "email": {email}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, r.base+"/t/acme/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.base)
	res, err = b.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "sign in as %s", email)
	return caller{browser: b}
}

// mintKey creates an operator key through the admin API as c.
func mintKey(t testing.TB, r *replica, c caller, scopes ...string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"kind": "operator", "name": "minted", "scopes": scopes})
	code, raw := adminCall(t, r, c, http.MethodPost, "/api/v1/tenants/acme/keys", string(body))
	require.Equal(t, http.StatusCreated, code, raw)
	var ck struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &ck))
	return ck.Token
}

// authorityWorld is acme with one member of each role (all with memberPW),
// signed in, behind a replica that knows the platform token.
type authorityWorld struct {
	*world
	r       *replica
	members map[identity.Role]identity.Member
	session map[identity.Role]caller
}

func newAuthorityWorld(t *testing.T) *authorityWorld {
	t.Helper()
	srv := privateRedis(t)
	w := &authorityWorld{world: newWorld(t), members: map[identity.Role]identity.Member{}, session: map[identity.Role]caller{}}
	for _, role := range identity.Roles {
		m, err := w.ids.CreateMember(context.Background(), w.acme.ID, string(role)+"@acme.test", memberPW, role)
		require.NoError(t, err)
		w.members[role] = m
	}
	w.r = startReplica(t, "A", w.dbURL, srv.URL(), "VISOR_ADMIN_TOKEN="+platformToken)
	for _, role := range identity.Roles {
		w.session[role] = signIn(t, w.r, string(role)+"@acme.test", memberPW)
	}
	return w
}

// route is one admin API operation as the served OpenAPI document lists it.
type route struct {
	method, path, id string
	action           identity.Action
	body             bool
}

// adminRoutes reads every operation of the admin API from the document the
// replica serves, which is generated from the same table as its router:
// a route added anywhere is in this list.
func adminRoutes(t *testing.T, r *replica) []route {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			ID        string `json:"operationId"`
			Authority struct {
				Action identity.Action `json:"action"`
			} `json:"x-visor-authority"`
			RequestBody json.RawMessage `json:"requestBody"`
		} `json:"paths"`
	}
	oauthGetJSON(t, r.base+"/api/v1/openapi.json", &doc)
	var out []route
	for p, ops := range doc.Paths {
		if p == "/api/v1/openapi.json" {
			continue
		}
		for m, op := range ops {
			out = append(out, route{method: strings.ToUpper(m), path: p, id: op.ID, action: op.Authority.Action, body: op.RequestBody != nil})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path+out[i].method < out[j].path+out[j].method })
	require.NotEmpty(t, out)
	return out
}

// concrete fills a route's path parameters: acme for the tenant, and ids
// and names nothing has, so an allowed request fails after authorization
// (400/404) without changing anything.
func (rt route) concrete() string {
	p := strings.Replace(rt.path, "{tenant}", "acme", 1)
	for strings.Contains(p, "{") {
		i, j := strings.Index(p, "{"), strings.Index(p, "}")
		p = p[:i] + uuid.NewString() + p[j+1:]
	}
	return p
}

// TestEveryAdminRouteByEveryCredential walks every admin API route with
// every kind of credential and checks that it is let through exactly when
// the credential's holder may take the route's action: each role's session,
// operator keys with each scope set (made by the CLI, and by members of
// lower roles), an agent key, a round token, an OAuth token, the platform
// token, another tenant's key and none. The expectations are written out
// here by hand, per credential; a route whose action is not among them (or
// that declares none) fails the test.
func TestEveryAdminRouteByEveryCredential(t *testing.T) {
	t.Parallel()
	w := newAuthorityWorld(t)
	r := w.r
	var rt struct {
		Token string `json:"token"`
	}
	w.api(t, r, http.MethodPost, "/tenants/acme/agents/"+w.ada.ID.String()+"/round-tokens", map[string]any{"task_id": pgtest.Task(t, w.db, w.acme.ID)}, &rt)
	oauth := ownerOAuthToken(t, r)
	globex := w.key(t, w.globex, identity.NewKey{Kind: identity.KeyOperator, Name: "globex", Scopes: []string{identity.ScopeAdminWrite}})
	cliKey := func(scopes ...string) caller {
		return caller{token: w.key(t, w.acme, identity.NewKey{Kind: identity.KeyOperator, Name: "cli", Scopes: scopes})}
	}

	reads := []identity.Action{identity.ReadTenant, identity.ReadAudit, identity.ManageOwnConsents}
	run := append(slices.Clone(reads), identity.ManageAgents, identity.ManageGrants, identity.ManageKeys)
	admin := append(slices.Clone(run), identity.ManageClients, identity.ManageSettings, identity.ManageMembers)
	owner := append(slices.Clone(admin), identity.ManageOwners)
	everything := append(slices.Clone(owner), identity.ManageTenants)
	creds := []struct {
		name    string
		c       caller
		allowed []identity.Action
		refused int // the status of a refusal: 403, or 401 when the credential is no credential here
	}{
		{"owner's session", w.session[identity.RoleOwner], owner, 403},
		{"admin's session", w.session[identity.RoleAdmin], admin, 403},
		{"operator's session", w.session[identity.RoleOperator], run, 403},
		{"viewer's session", w.session[identity.RoleViewer], reads, 403},
		{"CLI key admin:write tools:admin", cliKey(identity.ScopeAdminWrite, identity.ScopeToolsAdmin), owner, 403},
		{"CLI key admin:read", cliKey(identity.ScopeAdminRead), reads, 403},
		{"CLI key tools:read", cliKey(identity.ScopeToolsRead), nil, 403},
		{"CLI key tools:write", cliKey(identity.ScopeToolsWrite), nil, 403},
		{"CLI key tools:admin", cliKey(identity.ScopeToolsAdmin), nil, 403},
		{"operator's key admin:write", caller{token: mintKey(t, r, w.session[identity.RoleOperator], identity.ScopeAdminWrite)}, run, 403},
		{"operator's key, every scope", caller{token: mintKey(t, r, w.session[identity.RoleOperator])}, run, 403},
		{"admin's key admin:write", caller{token: mintKey(t, r, w.session[identity.RoleAdmin], identity.ScopeAdminWrite)}, admin, 403},
		{"admin's key admin:read", caller{token: mintKey(t, r, w.session[identity.RoleAdmin], identity.ScopeAdminRead)}, reads, 403},
		{"agent key", caller{token: w.adaKey}, nil, 403},
		{"round token", caller{token: rt.Token}, nil, 403},
		{"OAuth token", caller{token: oauth}, nil, 401},
		{"platform token", caller{token: platformToken}, everything, 403},
		{"globex's key", caller{token: globex}, nil, 401},
		{"no credential", caller{}, nil, 401},
	}
	var wrong []string
	for _, rt := range adminRoutes(t, r) {
		if !slices.Contains(everything, rt.action) {
			wrong = append(wrong, fmt.Sprintf("%s %s declares no admin API authority (x-visor-authority.action %q)", rt.method, rt.path, rt.action))
			continue
		}
		body := ""
		if rt.body {
			body = "{}"
		}
		for _, cr := range creds {
			code, raw := adminCall(t, r, cr.c, rt.method, rt.concrete(), body)
			want := cr.refused
			if !strings.Contains(rt.path, "{tenant}") && cr.refused == 401 && cr.c.token != "" && strings.HasPrefix(cr.c.token, "vsk_") {
				want = 403 // a key names its own tenant where the path names none
			}
			if !strings.Contains(rt.path, "{tenant}") && strings.HasPrefix(cr.c.token, "vsr_") {
				want = 401 // a round token cannot name its tenant
			}
			switch allowed := slices.Contains(cr.allowed, rt.action); {
			case allowed && (code == 401 || code == 403):
				wrong = append(wrong, fmt.Sprintf("%s %s as %s: %d, want it let through: %s", rt.method, rt.path, cr.name, code, raw))
			case !allowed && code != want:
				wrong = append(wrong, fmt.Sprintf("%s %s as %s: %d, want %d: %s", rt.method, rt.path, cr.name, code, want, raw))
			}
		}
	}
	require.Empty(t, wrong, "\n"+strings.Join(wrong, "\n"))
}

// ownerOAuthToken registers a client and has acme's owner authorize it.
func ownerOAuthToken(t *testing.T, r *replica) string {
	t.Helper()
	redirect := "http://127.0.0.1:7777/callback"
	body, _ := json.Marshal(map[string]any{"client_name": "Matrix", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	res, err := http.Post(r.base+"/t/acme/oauth/register", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&reg))
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)
	return oauthAuthorizeScope(t, r, r.base+"/t/acme/oauth/authorize", r.base+"/t/acme/oauth/token",
		reg.ClientID, redirect, r.base+"/t/acme/mcp", "Matrix", "tools:read").AccessToken
}

// TestNoCredentialOutranksItsHolder: the escalations that used to work.
// An operator (who may not manage members) makes a key and with it adds an
// owner and resets the owner's password; a tools:read key adds members and
// changes settings; an admin takes over an owner; a member raises their own
// role. Each is refused now, and the key records who made it.
func TestNoCredentialOutranksItsHolder(t *testing.T) {
	t.Parallel()
	w := newAuthorityWorld(t)
	r := w.r
	owner := w.members[identity.RoleOwner]
	base := "/api/v1/tenants/acme"
	newOwner := `{"email":"mallory@acme.test","password":"` + memberPW + `","role":"owner"}`
	ownerPW := `{"password":"mallory's password"}`

	opKey := caller{token: mintKey(t, r, w.session[identity.RoleOperator], identity.ScopeAdminWrite)}
	code, raw := adminCall(t, r, opKey, http.MethodPost, base+"/members", newOwner)
	require.Equal(t, 403, code, raw)
	code, raw = adminCall(t, r, opKey, http.MethodPatch, base+"/members/"+owner.ID.String(), ownerPW)
	require.Equal(t, 403, code, raw)
	code, raw = adminCall(t, r, opKey, http.MethodPost, base+"/members", `{"email":"v@acme.test","password":"`+memberPW+`","role":"viewer"}`)
	require.Equal(t, 403, code, raw)
	code, raw = adminCall(t, r, opKey, http.MethodGet, base+"/keys", "")
	require.Equal(t, 200, code, raw)
	require.Contains(t, raw, `"created_by":"member:`+w.members[identity.RoleOperator].ID.String()+`"`)

	// A key never gets a scope its creator lacks.
	code, raw = adminCall(t, r, caller{token: mintKey(t, r, opKey)}, http.MethodPost, base+"/keys", `{"kind":"operator","name":"x","scopes":["tools:admin"]}`)
	require.Equal(t, 403, code, raw)
	code, raw = adminCall(t, r, w.session[identity.RoleViewer], http.MethodPost, base+"/keys", `{"kind":"operator","name":"x"}`)
	require.Equal(t, 403, code, raw)

	reader := caller{token: w.key(t, w.acme, identity.NewKey{Kind: identity.KeyOperator, Name: "reader", Scopes: []string{identity.ScopeToolsRead}})}
	code, raw = adminCall(t, r, reader, http.MethodPost, base+"/members", `{"email":"v@acme.test","password":"`+memberPW+`","role":"viewer"}`)
	require.Equal(t, 403, code, raw)
	code, raw = adminCall(t, r, reader, http.MethodPatch, base, `{"settings":{"script_when_unavailable":"run_unsandboxed"}}`)
	require.Equal(t, 403, code, raw)

	admin := w.session[identity.RoleAdmin]
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, base + "/members", newOwner},
		{http.MethodPatch, base + "/members/" + owner.ID.String(), ownerPW},
		{http.MethodPatch, base + "/members/" + owner.ID.String(), `{"role":"viewer"}`},
		{http.MethodDelete, base + "/members/" + owner.ID.String(), ""},
		{http.MethodPatch, base + "/members/" + w.members[identity.RoleViewer].ID.String(), `{"role":"owner"}`},
		{http.MethodPatch, base + "/members/" + w.members[identity.RoleAdmin].ID.String(), `{"role":"owner"}`},
	} {
		code, raw = adminCall(t, r, admin, c.method, c.path, c.body)
		require.Equal(t, 403, code, "%s %s %s: %s", c.method, c.path, c.body, raw)
	}
	// The owner may do what the admin may not.
	code, raw = adminCall(t, r, w.session[identity.RoleOwner], http.MethodPatch, base+"/members/"+w.members[identity.RoleViewer].ID.String(), `{"role":"owner"}`)
	require.Equal(t, 200, code, raw)
}

// TestPasswordDemotionAndRemovalEndSessions: setting a member's password
// ends that member's other sessions (the one that set it stays), and so do
// a demotion and a removal.
func TestPasswordDemotionAndRemovalEndSessions(t *testing.T) {
	t.Parallel()
	w := newAuthorityWorld(t)
	r := w.r
	base := "/api/v1/tenants/acme"
	alive := func(c caller) bool {
		code, _ := adminCall(t, r, c, http.MethodGet, base+"/agents", "")
		return code == 200
	}
	admin := w.members[identity.RoleAdmin]
	second := signIn(t, r, "admin@acme.test", memberPW)
	code, raw := adminCall(t, r, w.session[identity.RoleAdmin], http.MethodPatch, base+"/members/"+admin.ID.String(), `{"password":"a brand new password"}`)
	require.Equal(t, 200, code, raw)
	require.True(t, alive(w.session[identity.RoleAdmin]), "the session that changed the password stays")
	require.False(t, alive(second), "the admin's other session ended")

	op := w.members[identity.RoleOperator]
	code, raw = adminCall(t, r, w.session[identity.RoleAdmin], http.MethodPatch, base+"/members/"+op.ID.String(), `{"password":"reset by the admin"}`)
	require.Equal(t, 200, code, raw)
	require.False(t, alive(w.session[identity.RoleOperator]), "a reset ends the member's sessions")

	code, raw = adminCall(t, r, w.session[identity.RoleOwner], http.MethodPatch, base+"/members/"+admin.ID.String(), `{"role":"operator"}`)
	require.Equal(t, 200, code, raw)
	require.False(t, alive(w.session[identity.RoleAdmin]), "a demotion ends the member's sessions")

	viewer := w.session[identity.RoleViewer]
	require.True(t, alive(viewer))
	code, raw = adminCall(t, r, w.session[identity.RoleOwner], http.MethodDelete, base+"/members/"+w.members[identity.RoleViewer].ID.String(), "")
	require.Equal(t, 204, code, raw)
	require.False(t, alive(viewer), "a removal ends the member's sessions")
}

// TestNarrowEmployeeCredentialsOnTheEndpoint: a round token minted through
// the admin API with only tools:read, and an agent key made with only
// tools:read, neither see nor call create_agent on the MCP endpoint; a round
// token minted with the default scopes still does.
func TestNarrowEmployeeCredentialsOnTheEndpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL())
	mint := func(scopes ...string) string {
		var rt struct {
			Token  string   `json:"token"`
			Scopes []string `json:"scopes"`
		}
		in := map[string]any{"task_id": pgtest.Task(t, w.db, w.acme.ID)}
		if scopes != nil {
			in["scopes"] = scopes
		}
		w.api(t, r, http.MethodPost, "/tenants/acme/agents/"+w.ada.ID.String()+"/round-tokens", in, &rt)
		if scopes != nil {
			require.Equal(t, scopes, rt.Scopes)
		}
		return rt.Token
	}
	agents := func() string {
		var out json.RawMessage
		w.api(t, r, http.MethodGet, "/tenants/acme/agents", nil, &out)
		return string(out)
	}
	create := func(token, name string) (int, rpcMessage) {
		resp := mcpSend(t, r, token, modernVersion, "", map[string]any{"id": 1, "method": "tools/call",
			"params": map[string]any{"_meta": modernMeta(), "name": "create_agent", "arguments": map[string]any{"name": name}}})
		defer resp.Body.Close()
		var m rpcMessage
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			readSSE(resp.Body, func(x rpcMessage) {
				if x.ID != nil {
					m = x
				}
			})
		} else {
			_ = json.NewDecoder(resp.Body).Decode(&m)
		}
		return resp.StatusCode, m
	}
	readerKey := w.key(t, w.acme, identity.NewKey{Kind: identity.KeyAgent, AgentID: w.ada.ID, Name: "ada-reader",
		Scopes: []string{identity.ScopeToolsRead}})
	for name, token := range map[string]string{"round token tools:read": mint(identity.ScopeToolsRead), "agent key tools:read": readerKey} {
		require.NotContains(t, toolNames(t, r, token), "create_agent", name)
		code, m := create(token, "zed")
		refused := code == http.StatusForbidden || m.Error != nil || strings.Contains(string(m.Result), `"isError":true`)
		require.True(t, refused, "%s called create_agent: %d %s", name, code, m.Result)
		require.NotContains(t, agents(), `"zed"`, name)
	}
	full := mint()
	require.Contains(t, toolNames(t, r, full), "create_agent", "the default scopes keep today's behaviour")
	code, m := create(full, "yan")
	require.Equal(t, http.StatusOK, code)
	require.Nil(t, m.Error)
	require.Contains(t, agents(), `"yan"`)
}
