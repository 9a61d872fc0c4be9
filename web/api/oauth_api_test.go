package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/api"
)

// oauthFixture serves the admin API with the OAuth clients and round token
// resources: tenants acme and globex, each with an operator key and an
// employee ada.
type oauthFixture struct {
	*fixture
	creds          *postgres.CredentialStore
	agentA, agentB identity.Agent
}

func newOAuthFixture(t *testing.T) *oauthFixture {
	t.Helper()
	s := newStack(t)
	creds := postgres.NewCredentialStore(s.db)
	as, err := oauth.New(context.Background(), oauth.Config{BaseURL: "http://visor.test"}, creds, s.ids, s.log)
	require.NoError(t, err)
	rounds := auth.NewRounds(creds, s.store)
	rounds.Changes = s.resolver
	s.resolver.Rounds = rounds
	f := s.serve(api.Deps{}, api.NewOAuthClients(as, creds), api.NewRoundTokens(rounds, creds)).withGlobex()
	return &oauthFixture{fixture: f, creds: creds,
		agentA: f.agent(f.tenant, identity.NewAgent{Name: "ada"}), agentB: f.agent(f.globex, identity.NewAgent{Name: "ada"})}
}

func TestOAuthClientsAPI(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	var created api.OAuthClient
	status := f.status(http.MethodPost, "/api/v1/tenants/acme/oauth/clients", f.opKey,
		`{"client_name":"CI bot","redirect_uris":["https://ci.example/cb"],"token_endpoint_auth_method":"client_secret_basic","scope":"tools:read"}`, &created)
	require.Equal(t, http.StatusCreated, status)
	require.NotEmpty(t, created.ClientSecret)
	require.Equal(t, "preregistered", created.Kind)

	var list api.OAuthClientList
	require.Equal(t, http.StatusOK, f.status(http.MethodGet, "/api/v1/tenants/acme/oauth/clients", f.opKey, "", &list))
	require.Len(t, list.Clients, 1)
	require.Empty(t, list.Clients[0].ClientSecret, "the secret is shown once")

	status, body := f.do(http.MethodPost, "/api/v1/tenants/acme/oauth/clients", f.opKey, `{"client_name":"x","redirect_uris":["http://evil.example/cb"]}`, nil)
	require.Equal(t, http.StatusBadRequest, status)
	requireError(t, body, "invalid_argument")

	// Tenant B sees none of A's clients and cannot delete them.
	require.Equal(t, http.StatusOK, f.status(http.MethodGet, "/api/v1/tenants/globex/oauth/clients", f.otherKey, "", &list))
	require.Empty(t, list.Clients)
	require.Equal(t, http.StatusNotFound, f.status(http.MethodDelete, "/api/v1/tenants/globex/oauth/clients/"+created.ClientID, f.otherKey, "", nil))
	require.Equal(t, http.StatusUnauthorized, f.status(http.MethodGet, "/api/v1/tenants/acme/oauth/clients", f.otherKey, "", nil))
	require.Equal(t, http.StatusNoContent, f.status(http.MethodDelete, "/api/v1/tenants/acme/oauth/clients/"+url.PathEscape(created.ClientID), f.opKey, "", nil))
	require.Equal(t, http.StatusNotFound, f.status(http.MethodDelete, "/api/v1/tenants/acme/oauth/clients/"+created.ClientID, f.opKey, "", nil))
}

func TestRoundTokensAPI(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	var rt api.RoundToken
	task := pgtest.Task(t, f.db, f.tenant.ID)
	body := `{"task_id":"` + task.String() + `","ttl_seconds":600}`
	status := f.status(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.opKey, body, &rt)
	require.Equal(t, http.StatusCreated, status)
	require.True(t, strings.HasPrefix(rt.Token, "vsr_"))
	require.Equal(t, task, rt.TaskID)

	// Another tenant's agent, a missing task, an unknown task, a bad TTL.
	require.Equal(t, http.StatusNotFound, f.status(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentB.ID.String()+"/round-tokens", f.opKey, body, nil))
	require.Equal(t, http.StatusBadRequest, f.status(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.opKey, `{}`, nil))
	require.Equal(t, http.StatusNotFound, f.status(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.opKey,
		`{"task_id":"6f1c1d1e-9d3b-4f5a-8b61-3d2f1b7a9c10","ttl_seconds":600}`, nil))
	require.Equal(t, http.StatusBadRequest, f.status(http.MethodPost, "/api/v1/tenants/acme/agents/"+f.agentA.ID.String()+"/round-tokens", f.opKey,
		`{"task_id":"`+task.String()+`","ttl_seconds":999999}`, nil))

	require.Equal(t, http.StatusNotFound, f.status(http.MethodDelete, "/api/v1/tenants/globex/round-tokens/"+rt.ID.String(), f.otherKey, "", nil))
	// The round token authenticates (and is cached) until it is revoked;
	// revocation announces the change, so the next request is refused.
	require.NotEqual(t, http.StatusUnauthorized, f.status(http.MethodGet, "/api/v1/tenants/acme/agents", rt.Token, "", nil))
	require.Equal(t, http.StatusNoContent, f.status(http.MethodDelete, "/api/v1/tenants/acme/round-tokens/"+rt.ID.String(), f.opKey, "", nil))
	require.Equal(t, http.StatusUnauthorized, f.status(http.MethodGet, "/api/v1/tenants/acme/agents", rt.Token, "", nil))
}

func TestConsentsAPI(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	ctx := context.Background()
	m, err := f.ids.CreateMember(ctx, f.tenant.ID, "alice@acme.test", "correct horse battery", identity.RoleViewer)
	require.NoError(t, err)
	var cl api.OAuthClient
	require.Equal(t, http.StatusCreated, f.status(http.MethodPost, "/api/v1/tenants/acme/oauth/clients", f.opKey,
		`{"client_name":"C","redirect_uris":["https://c.example/cb"]}`, &cl))
	require.NoError(t, f.creds.AddConsent(ctx, f.tenant.ID, m.ID, cl.ClientID, []string{"tools:read"}))

	q := "?member_id=" + m.ID.String()
	var list api.ConsentList
	require.Equal(t, http.StatusOK, f.status(http.MethodGet, "/api/v1/tenants/acme/oauth/consents"+q, f.opKey, "", &list))
	require.Equal(t, []api.Consent{{ClientID: cl.ClientID, Scopes: []string{"tools:read"}}}, list.Consents)
	require.Equal(t, http.StatusBadRequest, f.status(http.MethodGet, "/api/v1/tenants/acme/oauth/consents", f.opKey, "", nil))
	require.Equal(t, http.StatusOK, f.status(http.MethodGet, "/api/v1/tenants/globex/oauth/consents"+q, f.otherKey, "", &list))
	require.Empty(t, list.Consents)
	require.Equal(t, http.StatusNotFound, f.status(http.MethodDelete, "/api/v1/tenants/globex/oauth/consents/"+cl.ClientID+q, f.otherKey, "", nil))
	require.Equal(t, http.StatusNoContent, f.status(http.MethodDelete, "/api/v1/tenants/acme/oauth/consents/"+cl.ClientID+q, f.opKey, "", nil))
	require.Equal(t, http.StatusOK, f.status(http.MethodGet, "/api/v1/tenants/acme/oauth/consents"+q, f.opKey, "", &list))
	require.Empty(t, list.Consents)
}
