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
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/api"
	"github.com/visorhq/visor/web/longpoll"
	"github.com/visorhq/visor/web/server"
)

// TestClosingARunEndsItsRoundTokenAndLateSpendIsNotCounted: when the next
// run opens, the previous run closes and its round token stops working at
// once (not at its expiry); a report for a closed run that still gets
// through (a cached credential) is refused with 409, audited, and not
// added to the window's spend.
func TestClosingARunEndsItsRoundTokenAndLateSpendIsNotCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	log := slog.New(slog.DiscardHandler)
	resolver := auth.NewResolver(store, store, auth.NewURLs("http://visor.test"), log)
	minter := auth.NewRounds(postgres.NewCredentialStore(db), store)
	resolver.Rounds = minter
	ids := identity.NewService(store, resolver, log)
	svc := responsibilities.NewService(postgres.NewResponsibilityStore(db), agents.NewDelegation(store))
	svc.SetRounds(rounds.NewService(rounds.Config{Store: postgres.NewRoundsStore(db), Minter: minter, Changes: resolver}))
	trail := postgres.NewAuditLog(db, 2, log)
	require.NoError(t, trail.Start(ctx))
	t.Cleanup(trail.Stop)
	e := server.New(server.Options{Logger: log, BodyLimit: 64 << 10, ErrorHandler: api.ErrorHandler(log)}).Echo()
	longpoll.NewSpend(svc, trail).Register(e, resolver.Middleware(""))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
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

	acme, err := ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	ada, err := ids.CreateAgent(ctx, acme.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	r, err := svc.Create(ctx, acme.ID, "", "operator:k", responsibilities.Draft{AgentID: ada.ID, Name: "inbox", SpendCapCents: 1000})
	require.NoError(t, err)
	first, err := svc.OpenRun(ctx, acme.ID, r.ID, responsibilities.Wake{Reason: responsibilities.ByOperator})
	require.NoError(t, err)
	_, round, err := minter.Mint(ctx, acme.ID, ada.ID, first.TaskID, nil, 0)
	require.NoError(t, err)
	code, body := post(round, `{"cost_cents": 10}`)
	require.Equal(t, 200, code, body)

	// The next run opens: the first closes, and its token with it.
	second, err := svc.OpenRun(ctx, acme.ID, r.ID, responsibilities.Wake{Reason: responsibilities.ByOperator})
	require.NoError(t, err)
	code, body = post(round, `{"cost_cents": 500}`)
	require.Equal(t, 401, code, "the closed run's round token stopped working: %s", body)

	// A report that reaches the service anyway is not counted.
	_, err = svc.ReportSpend(ctx, acme.ID, ada.ID, first.TaskID, 500)
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	require.Contains(t, fault.Message(err), "not counted")
	sum, err := svc.Summarize(ctx, r)
	require.NoError(t, err)
	require.Equal(t, int64(10), sum.Window.SpendCents)

	// Over HTTP, with a token still live on the closed run's task (minted
	// after the close), the refusal is a 409 and audited.
	_, late, err := minter.Mint(ctx, acme.ID, ada.ID, first.TaskID, nil, 0)
	require.NoError(t, err)
	code, body = post(late, `{"cost_cents": 7}`)
	require.Equal(t, 409, code, body)
	var refusals int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND tool = $2 AND outcome = 'refused'
		AND message LIKE '%not counted%'`, acme.ID, longpoll.SpendTool).Scan(&refusals))
	require.Equal(t, 1, refusals)

	// Closing a run by its task being done ends its token too.
	_, live, err := minter.Mint(ctx, acme.ID, ada.ID, second.TaskID, nil, 0)
	require.NoError(t, err)
	code, body = post(live, `{"cost_cents": 1}`)
	require.Equal(t, 200, code, body)
	_, err = svc.CloseRun(ctx, acme.ID, second.ID)
	require.NoError(t, err)
	code, body = post(live, `{"cost_cents": 1}`)
	require.Equal(t, 401, code, body)
	sum, err = svc.Summarize(ctx, r)
	require.NoError(t, err)
	require.Equal(t, int64(11), sum.Window.SpendCents)
}
