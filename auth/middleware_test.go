package auth_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// keyEnv is the setup bundle of the API key tests: two tenants, an agent in
// each, and a probe server that echoes the resolved principal.
type keyEnv struct {
	db       *postgres.DB
	svc      *identity.Service
	resolver *auth.Resolver
	creds    *postgres.CredentialStore
	rounds   *auth.Rounds
	srv      *httptest.Server
	a, b     identity.Tenant
	agentA   identity.Agent
	// board runs tasks for round tokens to name; finishing one ends its
	// rounds through the rounds service, as in cmd/visor.
	board *board.Service
}

// task returns a new open task of tenant tn, assigned to nobody.
func (env *keyEnv) task(t *testing.T, tn identity.Tenant) uuid.UUID {
	t.Helper()
	op := board.Operator(identity.Principal{TenantID: tn.ID, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: []string{identity.ScopeToolsAdmin}}, tn)
	tk, err := env.board.CreateTask(context.Background(), op, board.NewTask{Kind: board.KindTask, Title: "a round's work"})
	require.NoError(t, err)
	return tk.ID
}

func newKeyEnv(t *testing.T) *keyEnv {
	t.Helper()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The resolver hears the service's change events, as on the replica
	// that makes a change (cmd/visor also forwards them to Redis).
	resolver := auth.NewResolver(store, store, auth.NewURLs("https://visor.test"), log)
	svc := identity.NewService(store, resolver, log)
	ctx := context.Background()
	env := &keyEnv{db: db, svc: svc, resolver: resolver}
	var err error
	tt := pgtest.TwoTenants(t, db)
	env.a, env.b = tt.A, tt.B
	env.agentA, err = svc.CreateAgent(ctx, env.a.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	env.creds = postgres.NewCredentialStore(db)
	env.rounds = auth.NewRounds(env.creds, store)
	env.resolver.Rounds = env.rounds
	ender := rounds.NewService(rounds.Config{Store: postgres.NewRoundsStore(db), Minter: env.rounds, Changes: resolver})
	env.board = board.NewService(board.Deps{Store: postgres.NewBoardStore(db), Relations: agents.NewDelegation(store),
		Directory: store, Staff: svc, Rounds: ender, Logger: log})

	e := echo.New()
	probe := func(c echo.Context) error {
		p, ok := identity.PrincipalFrom(c.Request().Context())
		require.True(t, ok)
		tn, ok := auth.TenantFrom(c.Request().Context())
		require.True(t, ok)
		require.Equal(t, tn.ID, p.TenantID)
		return c.JSON(http.StatusOK, p)
	}
	e.GET("/t/:tenant/probe", probe, env.resolver.Middleware(""))
	e.GET("/api/v1/whoami", probe, env.resolver.AdminMiddleware())
	e.GET("/api/v1/t/:tenant/whoami", probe, env.resolver.AdminMiddleware())
	e.GET("/t/:tenant/needs-write", func(c echo.Context) error {
		env.resolver.WriteInsufficientScope(c.Response(), c.Request(), identity.ScopeToolsWrite)
		return nil
	}, env.resolver.Middleware(""))
	env.srv = httptest.NewServer(e)
	t.Cleanup(env.srv.Close)
	return env
}

func (env *keyEnv) get(t *testing.T, path, token string) (*http.Response, identity.Principal) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, env.srv.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var p identity.Principal
	if res.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
	}
	return res, p
}

func (env *keyEnv) key(t *testing.T, tenant identity.Tenant, in identity.NewKey) (identity.Key, string) {
	t.Helper()
	if in.Name == "" {
		in.Name = "test"
	}
	k, token, err := env.svc.CreateKey(context.Background(), tenant.ID, in)
	require.NoError(t, err)
	return k, token
}

func TestOperatorAndAgentKeys(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	op, opToken := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator, Scopes: []string{identity.ScopeAdminWrite}})
	_, agToken := env.key(t, env.a, identity.NewKey{Kind: identity.KeyAgent, AgentID: env.agentA.ID})

	res, p := env.get(t, "/t/acme/probe", opToken)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, identity.KindOperator, p.Kind)
	require.Equal(t, []string{identity.ScopeAdminWrite}, p.Scopes)
	require.Equal(t, "key:"+op.ID.String(), p.CredentialID)
	require.Equal(t, "acme", p.TenantSlug)

	res, p = env.get(t, "/t/acme/probe", agToken)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, identity.KindEmployee, p.Kind)
	require.Equal(t, env.agentA.ID, p.AgentID)

	// The admin variant finds the tenant through the key.
	res, p = env.get(t, "/api/v1/whoami", opToken)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, env.a.ID, p.TenantID)
	res, _ = env.get(t, "/api/v1/t/acme/whoami", opToken)
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = env.get(t, "/api/v1/t/globex/whoami", opToken)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

func TestKeyRefusals(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()
	_, opToken := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator})
	revoked, revokedToken := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator})
	_, err := env.svc.RevokeKey(ctx, env.a.ID, revoked.ID)
	require.NoError(t, err)
	expired, expiredToken := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator})
	_, err = env.db.Pool.Exec(ctx, `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID)
	require.NoError(t, err)
	trashedAgent, err := env.svc.CreateAgent(ctx, env.a.ID, identity.NewAgent{Name: "tim"})
	require.NoError(t, err)
	_, trashedToken := env.key(t, env.a, identity.NewKey{Kind: identity.KeyAgent, AgentID: trashedAgent.ID})
	_, err = env.svc.TrashAgent(ctx, env.a.ID, trashedAgent.ID)
	require.NoError(t, err)
	_, otherToken := env.key(t, env.b, identity.NewKey{Kind: identity.KeyOperator})
	id, _, _ := identity.ParseKeyToken(opToken)
	wrongSecret, _ := identity.NewKeySecret(id)

	for name, token := range map[string]string{
		"missing":          "",
		"garbage":          "not-a-token",
		"malformed key":    "vsk_zz",
		"wrong secret":     wrongSecret,
		"revoked":          revokedToken,
		"expired":          expiredToken,
		"trashed agent":    trashedToken,
		"another tenant":   otherToken,
		"round, malformed": "vsr_whatever",
	} {
		res, _ := env.get(t, "/t/acme/probe", token)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, name)
		h := res.Header.Get("WWW-Authenticate")
		require.Contains(t, h, `Bearer resource_metadata="https://visor.test/.well-known/oauth-protected-resource/t/acme/mcp"`, name)
		require.Contains(t, h, `scope="tools:read tools:write tools:admin"`, name)
		if token == "" {
			require.NotContains(t, h, "invalid_token")
		} else {
			require.Contains(t, h, `error="invalid_token"`, name)
		}
	}
	res, _ := env.get(t, "/t/nosuch/probe", opToken)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = env.get(t, "/t/NOT_A_SLUG/probe", opToken)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = env.get(t, "/api/v1/whoami", revokedToken)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

// TestRevocationBeatsCache shows the verification cache never outlives a
// revocation or a trashing: liveness is read from the row every time.
func TestRevocationBeatsCache(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()
	k, token := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator})
	agKey, agToken := env.key(t, env.a, identity.NewKey{Kind: identity.KeyAgent, AgentID: env.agentA.ID})
	for range 3 { // warm the cache
		res, _ := env.get(t, "/t/acme/probe", token)
		require.Equal(t, http.StatusOK, res.StatusCode)
		res, _ = env.get(t, "/t/acme/probe", agToken)
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	_, err := env.svc.RevokeKey(ctx, env.a.ID, k.ID)
	require.NoError(t, err)
	res, _ := env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)

	_, err = env.svc.TrashAgent(ctx, env.a.ID, env.agentA.ID)
	require.NoError(t, err)
	res, _ = env.get(t, "/t/acme/probe", agToken)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	_, err = env.db.Pool.Exec(ctx, `UPDATE api_keys SET expires_at = now() WHERE id = $1`, agKey.ID)
	require.NoError(t, err)
	_, err = env.svc.RestoreAgent(ctx, env.a.ID, env.agentA.ID)
	require.NoError(t, err)
	res, _ = env.get(t, "/t/acme/probe", agToken)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "expired while cached")
}

func TestInsufficientScope(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	_, token := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator, Scopes: []string{identity.ScopeToolsRead}})
	res, _ := env.get(t, "/t/acme/needs-write", token)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	h := res.Header.Get("WWW-Authenticate")
	require.Contains(t, h, `error="insufficient_scope"`)
	require.Contains(t, h, `scope="tools:write"`)
	require.Contains(t, h, `resource_metadata="https://visor.test/.well-known/oauth-protected-resource/t/acme/mcp"`)
}
