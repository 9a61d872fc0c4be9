package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/api"
)

// oauthFixture serves the admin API with the OAuth clients and round token
// resources, two tenants and an operator key in each.
type oauthFixture struct {
	t              *testing.T
	srv            *httptest.Server
	keyA, keyB     string
	agentA, agentB identity.Agent
	ids            *identity.Service
	creds          *postgres.CredentialStore
	db             *postgres.DB
	tenantA        identity.Tenant
}

func newOAuthFixture(t *testing.T) *oauthFixture {
	t.Helper()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	creds := postgres.NewCredentialStore(db)
	log := slog.New(slog.DiscardHandler)
	resolver := auth.NewResolver(store, store, auth.NewURLs("http://visor.test"), log)
	ids := identity.NewService(store, resolver, log) // the resolver hears committed changes
	ctx := context.Background()
	as, err := oauth.New(ctx, oauth.Config{BaseURL: "http://visor.test"}, creds, ids, log)
	require.NoError(t, err)
	rounds := auth.NewRounds(creds, store)
	rounds.Changes = resolver
	resolver.Rounds = rounds
	e := echo.New()
	e.HTTPErrorHandler = api.ErrorHandler(log)
	adm := api.New(api.Deps{Identity: ids, Authenticate: resolver.AdminMiddleware(), Logger: log})
	adm.Add(api.NewOAuthClients(as, creds), api.NewRoundTokens(rounds, creds))
	adm.Register(e)
	f := &oauthFixture{t: t, srv: httptest.NewServer(e), ids: ids, creds: creds, db: db}
	t.Cleanup(f.srv.Close)
	for _, x := range []struct {
		slug  string
		key   *string
		agent *identity.Agent
	}{{"acme", &f.keyA, &f.agentA}, {"globex", &f.keyB, &f.agentB}} {
		tn, err := ids.CreateTenant(ctx, x.slug, x.slug)
		require.NoError(t, err)
		if x.slug == "acme" {
			f.tenantA = tn
		}
		_, *x.key, err = ids.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "ops"})
		require.NoError(t, err)
		*x.agent, err = ids.CreateAgent(ctx, tn.ID, identity.NewAgent{Name: "ada"})
		require.NoError(t, err)
	}
	return f
}

func (f *oauthFixture) do(method, path, token, body string, out any) int {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && len(raw) > 0 {
		require.NoError(f.t, json.Unmarshal(raw, out), string(raw))
	}
	return res.StatusCode
}

func TestOAuthClientsAPI(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	var created api.OAuthClient
	status := f.do(http.MethodPost, "/api/v1/tenants/acme/oauth/clients", f.keyA,
		`{"client_name":"CI bot","redirect_uris":["https://ci.example/cb"],"token_endpoint_auth_method":"client_secret_basic","scope":"tools:read"}`, &created)
	require.Equal(t, http.StatusCreated, status)
	require.NotEmpty(t, created.ClientSecret)
	require.Equal(t, "preregistered", created.Kind)

	var list api.OAuthClientList
	require.Equal(t, http.StatusOK, f.do(http.MethodGet, "/api/v1/tenants/acme/oauth/clients", f.keyA, "", &list))
	require.Len(t, list.Clients, 1)
	require.Empty(t, list.Clients[0].ClientSecret, "the secret is shown once")

	var bad map[string]map[string]string
	status = f.do(http.MethodPost, "/api/v1/tenants/acme/oauth/clients", f.keyA, `{"client_name":"x","redirect_uris":["http://evil.example/cb"]}`, &bad)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_argument", bad["error"]["code"])

	// Tenant B sees none of A's clients and cannot delete them.
	require.Equal(t, http.StatusOK, f.do(http.MethodGet, "/api/v1/tenants/globex/oauth/clients", f.keyB, "", &list))
	require.Empty(t, list.Clients)
	require.Equal(t, http.StatusNotFound, f.do(http.MethodDelete, "/api/v1/tenants/globex/oauth/clients/"+created.ClientID, f.keyB, "", nil))
	require.Equal(t, http.StatusUnauthorized, f.do(http.MethodGet, "/api/v1/tenants/acme/oauth/clients", f.keyB, "", nil))
	require.Equal(t, http.StatusNoContent, f.do(http.MethodDelete, "/api/v1/tenants/acme/oauth/clients/"+url.PathEscape(created.ClientID), f.keyA, "", nil))
	require.Equal(t, http.StatusNotFound, f.do(http.MethodDelete, "/api/v1/tenants/acme/oauth/clients/"+created.ClientID, f.keyA, "", nil))
}

func TestRoundTokensAPI(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	var rt api.RoundToken
	task := pgtest.Task(t, f.db, f.tenantA.ID)
	body := `{"task_id":"` + task.String() + `","ttl_seconds":600}`
	status := f.do(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.keyA, body, &rt)
	require.Equal(t, http.StatusCreated, status)
	require.True(t, strings.HasPrefix(rt.Token, "vsr_"))
	require.Equal(t, task, rt.TaskID)

	// Another tenant's agent, a missing task, an unknown task, a bad TTL.
	require.Equal(t, http.StatusNotFound, f.do(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentB.ID.String()+"/round-tokens", f.keyA, body, nil))
	require.Equal(t, http.StatusBadRequest, f.do(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.keyA, `{}`, nil))
	require.Equal(t, http.StatusNotFound, f.do(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.keyA,
		`{"task_id":"6f1c1d1e-9d3b-4f5a-8b61-3d2f1b7a9c10","ttl_seconds":600}`, nil))
	require.Equal(t, http.StatusBadRequest, f.do(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.keyA,
		`{"task_id":"`+task.String()+`","ttl_seconds":999999}`, nil))

	require.Equal(t, http.StatusNotFound, f.do(http.MethodDelete, "/api/v1/tenants/globex/round-tokens/"+rt.ID.String(), f.keyB, "", nil))
	// The round token authenticates (and is cached) until it is revoked;
	// revocation announces the change, so the next request is refused.
	require.NotEqual(t, http.StatusUnauthorized, f.do(http.MethodGet, "/api/v1/tenants/acme/agents", rt.Token, "", nil))
	require.Equal(t, http.StatusNoContent, f.do(http.MethodDelete, "/api/v1/tenants/acme/round-tokens/"+rt.ID.String(), f.keyA, "", nil))
	require.Equal(t, http.StatusUnauthorized, f.do(http.MethodGet, "/api/v1/tenants/acme/agents", rt.Token, "", nil))
}

func TestConsentsAPI(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	ctx := context.Background()
	m, err := f.ids.CreateMember(ctx, f.tenantA.ID, "alice@acme.test", "correct horse battery", identity.RoleViewer)
	require.NoError(t, err)
	var cl api.OAuthClient
	require.Equal(t, http.StatusCreated, f.do(http.MethodPost, "/api/v1/tenants/acme/oauth/clients", f.keyA,
		`{"client_name":"C","redirect_uris":["https://c.example/cb"]}`, &cl))
	require.NoError(t, f.creds.AddConsent(ctx, f.tenantA.ID, m.ID, cl.ClientID, []string{"tools:read"}))

	q := "?member_id=" + m.ID.String()
	var list api.ConsentList
	require.Equal(t, http.StatusOK, f.do(http.MethodGet, "/api/v1/tenants/acme/oauth/consents"+q, f.keyA, "", &list))
	require.Equal(t, []api.Consent{{ClientID: cl.ClientID, Scopes: []string{"tools:read"}}}, list.Consents)
	require.Equal(t, http.StatusBadRequest, f.do(http.MethodGet, "/api/v1/tenants/acme/oauth/consents", f.keyA, "", nil))
	require.Equal(t, http.StatusOK, f.do(http.MethodGet, "/api/v1/tenants/globex/oauth/consents"+q, f.keyB, "", &list))
	require.Empty(t, list.Consents)
	require.Equal(t, http.StatusNotFound, f.do(http.MethodDelete, "/api/v1/tenants/globex/oauth/consents/"+cl.ClientID+q, f.keyB, "", nil))
	require.Equal(t, http.StatusNoContent, f.do(http.MethodDelete, "/api/v1/tenants/acme/oauth/consents/"+cl.ClientID+q, f.keyA, "", nil))
	require.Equal(t, http.StatusOK, f.do(http.MethodGet, "/api/v1/tenants/acme/oauth/consents"+q, f.keyA, "", &list))
	require.Empty(t, list.Consents)
}
