package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
)

// acmeRound is tenant A's delivery state, fresh for each case: an
// endpoint of A's employee and a wake-up of it, ready for a long-poll.
type acmeRound struct {
	endpoint rounds.Endpoint
	wakeup   rounds.Wakeup
}

func seedAcmeRound(t *testing.T, f boardFixture, rs *postgres.RoundsStore) acmeRound {
	t.Helper()
	ctx := context.Background()
	a := seedAcme(t, f)
	ep := rounds.Endpoint{ID: uuid.New(), TenantID: f.a.ID, AgentID: f.agentA.ID, URL: "https://acme.example.com/" + a.task.ID.String()}
	require.NoError(t, rs.PutEndpoint(ctx, &ep, []byte("acme's key")))
	var id uuid.UUID
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT id FROM wakeups WHERE tenant_id = $1 AND task_id = $2`, f.a.ID, a.task.ID).Scan(&id))
	tag, err := f.db.Pool.Exec(ctx, `UPDATE wakeups SET state = 'ready' WHERE tenant_id = $1 AND id = $2 AND state = 'queued'`, f.a.ID, id)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "the board wrote the wake-up queued")
	w, err := rs.Wakeup(ctx, f.a.ID, id)
	require.NoError(t, err)
	return acmeRound{endpoint: ep, wakeup: w}
}

// roundIntact checks tenant A's endpoint and wake-up are as seeded.
func roundIntact(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound, method string) {
	t.Helper()
	ctx := context.Background()
	eps, err := rs.Endpoints(ctx, f.a.ID)
	require.NoError(t, err)
	i := slices.IndexFunc(eps, func(e rounds.Endpoint) bool { return e.ID == a.endpoint.ID })
	require.GreaterOrEqual(t, i, 0, "%s deleted tenant A's endpoint", method)
	require.Equal(t, a.endpoint.URL, eps[i].URL, "%s changed tenant A's endpoint", method)
	var key []byte
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT secret FROM runtime_endpoints WHERE tenant_id = $1 AND id = $2`,
		f.a.ID, a.endpoint.ID).Scan(&key))
	require.Equal(t, []byte("acme's key"), key, "%s changed tenant A's signing key", method)
	w, err := rs.Wakeup(ctx, f.a.ID, a.wakeup.ID)
	require.NoError(t, err)
	require.Equal(t, rounds.Ready, w.State, "%s moved tenant A's wake-up", method)
	require.Zero(t, w.Attempts, "%s counted an attempt on tenant A's wake-up", method)
	require.Empty(t, w.LastError, "%s", method)
}

// roundsIsolation has one case per method of rounds.Store, called as
// tenant B with tenant A's ids.
var roundsIsolation = map[string]func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound){
	"PutEndpoint": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		ctx := context.Background()
		e := rounds.Endpoint{ID: uuid.New(), TenantID: f.b.ID, AgentID: f.agentA.ID, URL: "https://globex.example.com/"}
		notFound(t, rs.PutEndpoint(ctx, &e, []byte("k")), "PutEndpoint for another tenant's employee")
		own := rounds.Endpoint{ID: uuid.New(), TenantID: f.b.ID, AgentID: f.agentB.ID, URL: "https://globex.example.com/bob"}
		require.NoError(t, rs.PutEndpoint(ctx, &own, []byte("globex's key")), "B's own employee")
		def := rounds.Endpoint{ID: uuid.New(), TenantID: f.b.ID, URL: "https://globex.example.com/default"}
		require.NoError(t, rs.PutEndpoint(ctx, &def, []byte("globex's key")), "B's default replaces no default of A")
	},
	"Endpoints": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		eps, err := rs.Endpoints(context.Background(), f.b.ID)
		require.NoError(t, err)
		for _, e := range eps {
			require.NotEqual(t, a.endpoint.ID, e.ID, "Endpoints listed tenant A's endpoint")
		}
	},
	"DeleteEndpoint": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		notFound(t, rs.DeleteEndpoint(context.Background(), f.b.ID, a.endpoint.ID), "DeleteEndpoint")
	},
	"Wakeup": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		_, err := rs.Wakeup(context.Background(), f.b.ID, a.wakeup.ID)
		notFound(t, err, "Wakeup")
	},
	"Wakeups": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		for _, filter := range []rounds.Filter{{Limit: 100}, {Agent: f.agentA.ID, Limit: 100}, {State: rounds.Ready, Limit: 100}} {
			ws, err := rs.Wakeups(context.Background(), f.b.ID, filter)
			require.NoError(t, err)
			for _, w := range ws {
				require.Equal(t, f.b.ID, w.TenantID, "Wakeups %+v listed tenant A's wake-up", filter)
			}
		}
	},
	"Requeue": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		_, err := rs.Requeue(context.Background(), f.b.ID, a.wakeup.ID)
		notFound(t, err, "Requeue")
	},
	"Claim": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		ws, err := rs.Claim(context.Background(), f.b.ID, f.agentA.ID, 10, func(w rounds.Wakeup) credentials.RoundToken {
			t.Error("Claim minted a round token for another tenant's wake-up")
			return credentials.RoundToken{TenantID: f.b.ID, ID: uuid.New(), AgentID: w.AgentID, TaskID: w.TaskID,
				SecretHash: make([]byte, 32), ExpiresAt: time.Now().Add(time.Hour)}
		})
		require.NoError(t, err)
		require.Empty(t, ws, "Claim")
	},
	"EndRounds": func(t *testing.T, f boardFixture, rs *postgres.RoundsStore, a acmeRound) {
		n, err := rs.EndRounds(context.Background(), f.b.ID, a.wakeup.TaskID, uuid.Nil)
		require.NoError(t, err)
		require.Zero(t, n, "EndRounds revoked tenant A's round tokens")
	},
}

// TestEveryRoundsStoreMethodIsTenantIsolated walks rounds.Store's method
// set by reflection: a method added without a case here fails the test.
func TestEveryRoundsStoreMethodIsTenantIsolated(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	rs := postgres.NewRoundsStore(f.db)
	st := reflect.TypeFor[rounds.Store]()
	var methods []string
	for i := range st.NumMethod() {
		methods = append(methods, st.Method(i).Name)
	}
	for name := range roundsIsolation {
		require.True(t, slices.Contains(methods, name), "case %s names no method of rounds.Store; remove it", name)
	}
	for _, m := range methods {
		t.Run(m, func(t *testing.T) {
			check, ok := roundsIsolation[m]
			require.True(t, ok, "rounds.Store.%s has no two-tenant case in roundsIsolation: add one", m)
			a := seedAcmeRound(t, f, rs)
			check(t, f, rs, a)
			roundIntact(t, f, rs, a, m)
		})
	}
}

// TestRoundsLeasesAreTenantIsolated: the statements deliveries use read
// and record a wake-up only under its own tenant. A claim reads tenant
// A's wake-up with A's slug, employee, task and endpoint, never tenant B's
// default endpoint, even when A has none; an outcome recorded under
// tenant B's id for A's wake-up changes nothing; under A's own id it is
// recorded.
func TestRoundsLeasesAreTenantIsolated(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	ctx := context.Background()
	rs := postgres.NewRoundsStore(f.db)
	a := seedAcmeRound(t, f, rs)
	def := rounds.Endpoint{ID: uuid.New(), TenantID: f.b.ID, URL: "https://globex.example.com/default"}
	require.NoError(t, rs.PutEndpoint(ctx, &def, []byte("globex's key")))
	queue := func() {
		_, err := f.db.Pool.Exec(ctx, `UPDATE wakeups SET state = 'queued', next_attempt_at = now() - interval '1 second', leased_by = NULL
			WHERE tenant_id = $1 AND id = $2`, f.a.ID, a.wakeup.ID)
		require.NoError(t, err)
	}
	queue()
	tgs, err := rs.ClaimDue(ctx, "worker-a", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, tgs, 1)
	tg := tgs[0]
	require.Equal(t, a.wakeup.ID, tg.Wakeup.ID)
	require.Equal(t, f.a.ID, tg.Wakeup.TenantID)
	require.Equal(t, f.a.Slug, tg.TenantSlug)
	require.True(t, tg.AgentActive)
	require.False(t, tg.TaskFinished)
	require.Equal(t, a.endpoint.ID, tg.Endpoint.ID, "tenant A's employee's own endpoint")
	require.Equal(t, []byte("acme's key"), tg.Secret)

	require.NoError(t, rs.Record(ctx, []rounds.Outcome{{TenantID: f.b.ID, ID: a.wakeup.ID, Worker: "worker-a", State: rounds.Delivered},
		{TenantID: f.b.ID, ID: a.wakeup.ID, Worker: "worker-a", Error: "boom", Dead: true},
		{TenantID: f.b.ID, ID: a.wakeup.ID, Worker: "worker-a", Release: true}}))
	w, err := rs.Wakeup(ctx, f.a.ID, a.wakeup.ID)
	require.NoError(t, err)
	require.Equal(t, rounds.Queued, w.State, "Record under tenant B moved tenant A's wake-up")
	require.Zero(t, w.Attempts)
	again, err := rs.ClaimDue(ctx, "worker-b", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again, "tenant B's release did not end tenant A's lease")

	require.NoError(t, rs.Record(ctx, []rounds.Outcome{{TenantID: f.a.ID, ID: a.wakeup.ID, Worker: "worker-a", Error: "the runtime answered HTTP 503"}}))
	w, err = rs.Wakeup(ctx, f.a.ID, a.wakeup.ID)
	require.NoError(t, err)
	require.Equal(t, rounds.Queued, w.State, "a failed push that is not the last leaves it queued")
	require.Equal(t, 1, w.Attempts)
	require.Equal(t, "the runtime answered HTTP 503", w.LastError)

	// Without an endpoint of its own tenant, the wake-up has none: tenant
	// B's default is not A's.
	require.NoError(t, rs.DeleteEndpoint(ctx, f.a.ID, a.endpoint.ID))
	queue()
	tgs, err = rs.ClaimDue(ctx, "worker-a", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, tgs, 1)
	require.Nil(t, tgs[0].Endpoint, "tenant B's default endpoint serves no wake-up of tenant A")
	require.Empty(t, tgs[0].Secret)
	require.NoError(t, rs.Record(ctx, []rounds.Outcome{{TenantID: f.a.ID, ID: a.wakeup.ID, Worker: "worker-a", State: rounds.Ready}}))
	w, err = rs.Wakeup(ctx, f.a.ID, a.wakeup.ID)
	require.NoError(t, err)
	require.Equal(t, rounds.Ready, w.State)
}

// TestClaimDueLeasesEachWakeupOnce: claims take only queued wake-ups
// whose next attempt is due, oldest due first; concurrent claims never
// take the same one; a leased wake-up is not claimed again until its lease
// runs out, and then it is.
func TestClaimDueLeasesEachWakeupOnce(t *testing.T) {
	t.Parallel()
	f := boardSetup(t)
	ctx := context.Background()
	rs := postgres.NewRoundsStore(f.db)
	a := seedAcmeRound(t, f, rs) // ready: not claimed
	_, err := f.db.Pool.Exec(ctx, `INSERT INTO wakeups (tenant_id, id, agent_id, task_id, reason, state, next_attempt_at)
		SELECT $1, gen_random_uuid(), $2, $3, 'reminder', 'queued', now() - make_interval(secs => i)
		FROM generate_series(1, 300) i`, f.a.ID, f.agentA.ID, a.wakeup.TaskID)
	require.NoError(t, err)
	later := rounds.New(f.a.ID, f.agentA.ID, a.wakeup.TaskID, rounds.Message)
	_, err = f.db.Pool.Exec(ctx, `INSERT INTO wakeups (tenant_id, id, agent_id, task_id, reason, state, next_attempt_at)
		VALUES ($1, $2, $3, $4, 'message', 'queued', now() + interval '1 hour')`, f.a.ID, later.ID, f.agentA.ID, a.wakeup.TaskID)
	require.NoError(t, err)

	first, err := rs.ClaimDue(ctx, "worker-a", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, first, 1)
	var oldest uuid.UUID
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT id FROM wakeups WHERE tenant_id = $1 AND leased_by = 'worker-a'`, f.a.ID).Scan(&oldest))
	require.Equal(t, oldest, first[0].Wakeup.ID)

	var mu sync.Mutex
	seen := map[uuid.UUID]string{first[0].Wakeup.ID: "worker-a"}
	var wg sync.WaitGroup
	for _, worker := range []string{"worker-b", "worker-c", "worker-d"} {
		wg.Go(func() {
			for {
				tgs, err := rs.ClaimDue(ctx, worker, 40, time.Minute)
				if !assert.NoError(t, err) || len(tgs) == 0 {
					return
				}
				mu.Lock()
				for _, tg := range tgs {
					assert.Empty(t, seen[tg.Wakeup.ID], "wake-up %s claimed twice", tg.Wakeup.ID)
					seen[tg.Wakeup.ID] = worker
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, 300, "every due wake-up claimed once")
	require.NotContains(t, seen, later.ID, "not due yet")
	require.NotContains(t, seen, a.wakeup.ID, "not queued")
	var leased int
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM wakeups WHERE tenant_id = $1 AND leased_by IS NOT NULL
		AND next_attempt_at > now() + interval '50 seconds'`, f.a.ID).Scan(&leased))
	require.Equal(t, 300, leased, "each leased to its worker until the lease's end")

	// A lease that ran out: the wake-up is due again.
	_, err = f.db.Pool.Exec(ctx, `UPDATE wakeups SET next_attempt_at = now() - interval '1 second' WHERE tenant_id = $1 AND id = $2`,
		f.a.ID, oldest)
	require.NoError(t, err)
	again, err := rs.ClaimDue(ctx, "worker-e", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Equal(t, oldest, again[0].Wakeup.ID)
}
