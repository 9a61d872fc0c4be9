package longpoll_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/api"
	"github.com/visorhq/visor/web/longpoll"
	"github.com/visorhq/visor/web/server"
)

// TestARunsRoundTokenReportsItsSpend: the owner's round token on the run's
// task adds to the run's cost; every other credential is refused and the
// refusal audited; a bad body is 400.
func TestARunsRoundTokenReportsItsSpend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	log := slog.New(slog.DiscardHandler)
	resolver := auth.NewResolver(store, store, auth.NewURLs("http://visor.test"), log)
	creds := postgres.NewCredentialStore(db)
	minter := auth.NewRounds(creds, store)
	resolver.Rounds = minter
	ids := identity.NewService(store, resolver, log)
	rs := postgres.NewResponsibilityStore(db)
	svc := responsibilities.NewService(rs, agents.NewDelegation(store))
	trail := postgres.NewAuditLog(db, 2, log)
	require.NoError(t, trail.Start(ctx))
	t.Cleanup(trail.Stop)
	e := server.New(server.Options{Logger: log, BodyLimit: 64 << 10, ErrorHandler: api.ErrorHandler(log)}).Echo()
	longpoll.NewSpend(svc, trail).Register(e, resolver.Middleware(""))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	acme, err := ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	ada, err := ids.CreateAgent(ctx, acme.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	bob, err := ids.CreateAgent(ctx, acme.ID, identity.NewAgent{Name: "bob"})
	require.NoError(t, err)
	r, err := svc.Create(ctx, acme.ID, "", "operator:k", responsibilities.Draft{AgentID: ada.ID, Name: "inbox", SpendCapCents: 100})
	require.NoError(t, err)
	run, err := svc.OpenRun(ctx, acme.ID, r.ID, responsibilities.Wake{Reason: responsibilities.ByOperator})
	require.NoError(t, err)
	_, round, err := minter.Mint(ctx, acme.ID, ada.ID, run.TaskID, nil, 0)
	require.NoError(t, err)
	_, bobRound, err := minter.Mint(ctx, acme.ID, bob.ID, run.TaskID, nil, 0)
	require.NoError(t, err)
	_, elsewhere, err := minter.Mint(ctx, acme.ID, ada.ID, pgtest.Task(t, db, acme.ID), nil, 0)
	require.NoError(t, err)
	_, adaKey, err := ids.CreateKey(ctx, acme.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: ada.ID, Name: "ada"})
	require.NoError(t, err)

	post := func(token, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/t/acme/runtime/spend", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := post(round, `{"cost_cents": 40}`)
	require.Equal(t, 200, code, body)
	code, body = post(round, `{"cost_cents": 2}`)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"cost_cents":42`)

	for name, c := range map[string]struct {
		token, body string
		want        int
	}{
		"another employee's round": {bobRound, `{"cost_cents": 5}`, 403},
		"a round outside any run":  {elsewhere, `{"cost_cents": 5}`, 403},
		"the employee's key":       {adaKey, `{"cost_cents": 5}`, 403},
		"no amount":                {round, `{}`, 400},
		"a negative amount":        {round, `{"cost_cents": -5}`, 400},
		"not a number":             {round, `{"cost_cents": "5"}`, 400},
		"no credential":            {"", `{"cost_cents": 5}`, 401},
	} {
		code, body := post(c.token, c.body)
		require.Equal(t, c.want, code, "%s: %s", name, body)
	}
	sum, err := svc.Summarize(ctx, r)
	require.NoError(t, err)
	require.Equal(t, int64(42), sum.Window.SpendCents, "only the owner's round counted")

	var refusals int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND tool = $2 AND outcome = 'refused'`,
		acme.ID, longpoll.SpendTool).Scan(&refusals))
	require.Equal(t, 3, refusals, "each refused reporter is audited")
}
