package worker_test

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/agents"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/worker"
)

// TestDispatcherRunsRoutinesInTheTenantsTimeZone: a routine "0 9 * * *"
// of a tenant in Tokyo is next due at 09:00 Tokyo time; when its slot
// comes the dispatcher writes one run (a task and a routine wake-up due
// at the slot), which is delivered, and moves it to the next 09:00 Tokyo.
func TestDispatcherRunsRoutinesInTheTenantsTimeZone(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	tn, err := e.ids.UpdateTenant(e.ctx, e.acme.ID, func(tn *identity.Tenant) error {
		tn.Settings.TimeZone = "Asia/Tokyo"
		return nil
	})
	require.NoError(t, err)
	op := board.Actor{Principal: identity.Principal{TenantID: tn.ID, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: tn, MCP: true}
	r, err := e.board.CreateRoutine(e.ctx, op, board.NewRoutine{Name: "Morning report", Schedule: "0 9 * * *", Agent: e.ada.ID,
		Description: "Summarise yesterday."})
	require.NoError(t, err)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	next := r.NextRunAt.In(tokyo)
	require.Equal(t, 9, next.Hour(), "nine in the morning in the tenant's zone")
	require.Zero(t, next.Minute())
	require.True(t, next.After(time.Now()) && next.Before(time.Now().Add(24*time.Hour)))

	// Its slot comes: yesterday's 09:00 Tokyo.
	slot := next.Add(-24 * time.Hour)
	_, err = e.db.Pool.Exec(e.ctx, `UPDATE routines SET next_run_at = $3 WHERE tenant_id = $1 AND id = $2`, tn.ID, r.ID, slot)
	require.NoError(t, err)
	_, secret, err := e.svc.SetEndpoint(e.ctx, tn.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)
	d := &worker.Dispatcher{Board: e.board, Every: 50 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}
	require.NoError(t, d.Start(e.ctx))
	t.Cleanup(d.Stop)

	require.Eventually(t, func() bool { return len(e.rcv.deliveries()) == 1 }, 15*time.Second, 20*time.Millisecond)
	p := e.rcv.deliveries()[0].payload
	require.True(t, e.rcv.deliveries()[0].verified)
	require.Equal(t, rounds.Routine, p.Reason)
	require.Equal(t, e.ada.ID, p.AgentID)
	require.True(t, p.DueAt.Equal(slot), "due at the slot it ran for: %s vs %s", p.DueAt, slot)
	require.Equal(t, "Summarise yesterday.", p.Data[0].Text, "the routine's description is data")
	tk, err := e.boardStore.Task(e.ctx, tn.ID, p.TaskID)
	require.NoError(t, err)
	require.Equal(t, board.FromRoutine, tk.Origin)
	require.Equal(t, e.ada.ID, tk.AssigneeID)

	got, err := e.boardStore.Routine(e.ctx, tn.ID, r.ID)
	require.NoError(t, err)
	require.True(t, got.NextRunAt.Equal(*r.NextRunAt), "the next run is the next 09:00 in Tokyo: %s", got.NextRunAt)
	// The routine's next run is tomorrow, so only a second wake-up for
	// this slot could still arrive; once none is queued, none can.
	testsignal.Until(t, 20*time.Second, 20*time.Millisecond, "every wake-up settled", func() bool {
		var left int
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM wakeups WHERE state = 'queued'`).Scan(&left))
		return left == 0
	})
	var runs int
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM wakeups WHERE tenant_id = $1 AND reason = 'routine'`, tn.ID).Scan(&runs))
	require.Equal(t, 1, runs, "one slot, one run")
	require.Len(t, e.rcv.deliveries(), 1, "one slot, one delivery")
}

// BenchmarkWakeupLateness schedules VISOR_BENCH_REMINDERS (1,000)
// reminders due VISOR_BENCH_EVERY_MS (10) apart (0: all at the same
// instant) and measures, for each, the time from its due time to its
// receipt by a webhook receiver on loopback: the dispatcher (every 250 ms,
// as in `visor worker`) writes each reminder's task and wake-up, the
// claimers lease sets of due wake-ups, each push mints a round token and
// POSTs the signed payload over TLS through the guarded client. The
// deliveries run in a worker process of their own, as `visor worker`
// runs: a pool of VISOR_BENCH_POOL (40) connections, at most
// VISOR_BENCH_CONCURRENCY (worker.DefaultRoundsConcurrency) attempts in
// flight, VISOR_BENCH_CLAIMERS claim loops taking sets of up to
// VISOR_BENCH_BATCH (the defaults), the endpoint limit at
// VISOR_BENCH_ENDPOINT_LIMIT (rounds.DefaultEndpointLimit). It reports the
// lateness at p50, p99 and max, the deliveries a second after the first
// due time, and the settings and load average.
func BenchmarkWakeupLateness(b *testing.B) {
	for b.Loop() {
		lateness(b)
	}
}

// deliveryClaimers are the claim loops and the set size of the benchmarks'
// deliveries: VISOR_BENCH_CLAIMERS and VISOR_BENCH_BATCH, else the
// defaults.
func deliveryClaimers() (claimers, batch int) {
	return benchEnv("VISOR_BENCH_CLAIMERS", worker.DefaultDeliveryClaimers), benchEnv("VISOR_BENCH_BATCH", worker.DefaultDeliveryBatch)
}

// deliveryWorker stops e's runner and starts a worker process of its own
// pool of size connections: its rounds service (endpoint limit limit),
// board and dispatcher, and its runner with conc attempts in flight.
func (e *roundsEnv) deliveryWorker(b *testing.B, size, conc, limit int) {
	b.Helper()
	claimers, batch := deliveryClaimers()
	e.runner.Stop()
	db, err := postgres.Open(e.ctx, e.db.Pool.Config().ConnString(), func(c *pgxpool.Config) { c.MaxConns = int32(size) })
	require.NoError(b, err)
	b.Cleanup(db.Close)
	log := slog.New(slog.DiscardHandler)
	idStore := postgres.NewIdentityStore(db)
	boardStore := postgres.NewBoardStore(db)
	svc := rounds.NewService(rounds.Config{Store: postgres.NewRoundsStore(db), Minter: auth.NewRounds(postgres.NewCredentialStore(db), idStore),
		HTTP: egress.New(egress.Config{AllowPrivateHosts: []string{"127.0.0.1"}, RootCAs: rootsOf(e.rcv.srv), Timeout: 10 * time.Second,
			IdleConnsPerHost: limit}),
		DevHosts: []string{"127.0.0.1"}, MCPURL: func(slug string) string { return "https://visor.test/t/" + slug + "/mcp" }, Logger: log,
		EndpointLimit: limit})
	bs := board.NewService(board.Deps{Store: boardStore, Relations: agents.NewDelegation(idStore), Directory: idStore,
		Staff: e.ids, Rounds: svc, Logger: log})
	reg := worker.NewRegistry()
	worker.RegisterRounds(reg, svc, worker.RoundsOptions{Concurrency: conc, Claimers: claimers, Batch: batch,
		Backoff: func(int) time.Duration { return 100 * time.Millisecond }})
	r, err := worker.NewRunner(db.Pool, reg, worker.Options{Logger: log, DrainTimeout: 5 * time.Second})
	require.NoError(b, err)
	require.NoError(b, r.Start(e.ctx))
	b.Cleanup(r.Stop)
	d := &worker.Dispatcher{Board: bs, Log: log}
	require.NoError(b, d.Start(e.ctx))
	b.Cleanup(d.Stop)
}

func lateness(b *testing.B) {
	n, every := benchEnv("VISOR_BENCH_REMINDERS", 1000), time.Duration(benchEnv("VISOR_BENCH_EVERY_MS", 10))*time.Millisecond
	if os.Getenv("VISOR_BENCH_EVERY_MS") == "0" {
		every = 0 // all due at the same instant
	}
	size, conc := benchEnv("VISOR_BENCH_POOL", 40), benchEnv("VISOR_BENCH_CONCURRENCY", worker.DefaultRoundsConcurrency)
	limit := benchEnv("VISOR_BENCH_ENDPOINT_LIMIT", rounds.DefaultEndpointLimit)
	e := newRoundsEnv(b, false)
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(b, err)
	e.rcv.setKey(secret)
	var mu sync.Mutex
	late := make([]time.Duration, 0, n)
	e.rcv.onReceive = func(p rounds.Payload) {
		mu.Lock()
		late = append(late, time.Since(p.DueAt))
		mu.Unlock()
	}
	// The reminders go round VISOR_BENCH_AGENTS employees (1: all ada's).
	agents := []uuid.UUID{e.ada.ID}
	for i := 1; i < benchEnv("VISOR_BENCH_AGENTS", 1); i++ {
		a, err := e.ids.CreateAgent(e.ctx, e.acme.ID, identity.NewAgent{Name: fmt.Sprintf("bench-%d", i)})
		require.NoError(b, err)
		agents = append(agents, a.ID)
	}
	// Written in one statement before the worker starts, due from a few
	// seconds on, so the time spent writing them never counts as lateness.
	start := time.Now().Add(5 * time.Second)
	_, err = e.db.Pool.Exec(e.ctx, `INSERT INTO reminders (tenant_id, id, agent_id, text, due_at, creator_kind, created_by)
		SELECT $1, gen_random_uuid(), ($2::uuid[])[1 + i % cardinality($2::uuid[])], 'reminder ' || i,
			$4::timestamptz + (i - 1) * $5::interval, 'operator', 'key:op'
		FROM generate_series(1, $3) i`, e.acme.ID, agents, n, start, every)
	require.NoError(b, err)
	e.deliveryWorker(b, size, conc, limit)
	require.True(b, time.Now().Before(start), "the worker started after the first reminder was due")
	loadStart := loadAverage()
	testsignal.Until(b, max(2*time.Minute, time.Duration(n)*30*time.Millisecond), 50*time.Millisecond, "every reminder delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(late) >= n
	})
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	require.Len(b, late, n, "every reminder delivered")
	slices.Sort(late)
	p50, p99, pmax := late[n/2], late[n*99/100], late[n-1]
	var dispatched float64
	require.NoError(b, e.db.Pool.QueryRow(e.ctx, `SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - due_at))
		FROM wakeups WHERE tenant_id = $1`, e.acme.ID).Scan(&dispatched))
	b.ReportMetric(dispatched*1000, "written-p99-ms")
	b.ReportMetric(float64(n), "reminders")
	b.ReportMetric(float64(len(agents)), "employees")
	b.ReportMetric(float64(p50)/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
	b.ReportMetric(float64(pmax)/float64(time.Millisecond), "max-ms")
	b.ReportMetric(float64(n)/took.Seconds(), "deliveries/s")
	b.ReportMetric(float64(size), "pool-conns")
	b.ReportMetric(float64(conc), "in-flight")
	claimers, batch := deliveryClaimers()
	b.ReportMetric(float64(claimers), "claimers")
	b.ReportMetric(float64(batch), "claim-batch")
	b.ReportMetric(float64(limit), "endpoint-limit")
	b.ReportMetric(loadStart, "load-start")
	b.ReportMetric(loadAverage(), "load-end")
	fmt.Printf("wake-up lateness over %d reminders: p50 %s, p99 %s, max %s\n", n, p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		pmax.Round(time.Millisecond))
}

// BenchmarkPullLateness: the pulling runtime. VISOR_BENCH_REMINDERS (200)
// reminders of one employee with no push endpoint fall due
// VISOR_BENCH_EVERY_MS (50) apart; a worker process as in
// BenchmarkWakeupLateness writes and readies them, and one runtime
// long-polls (up to 50 at a time, waiting 30 s), woken by the Postgres
// notification through the bell as a serve replica is. Lateness is the
// time a wake-up reached the runtime minus its due time, at p50, p99 and
// max.
func BenchmarkPullLateness(b *testing.B) {
	for b.Loop() {
		pullLateness(b)
	}
}

func pullLateness(b *testing.B) {
	n, every := benchEnv("VISOR_BENCH_REMINDERS", 200), time.Duration(benchEnv("VISOR_BENCH_EVERY_MS", 50))*time.Millisecond
	size, conc := benchEnv("VISOR_BENCH_POOL", 40), benchEnv("VISOR_BENCH_CONCURRENCY", worker.DefaultRoundsConcurrency)
	e := newRoundsEnv(b, false)
	bell := rounds.NewBell()
	e.svc.SetBell(bell)
	l := postgres.NewWakeupListener(e.db, bell, slog.New(slog.DiscardHandler))
	require.NoError(b, l.Start(e.ctx))
	b.Cleanup(l.Stop)
	start := time.Now().Add(5 * time.Second)
	_, err := e.db.Pool.Exec(e.ctx, `INSERT INTO reminders (tenant_id, id, agent_id, text, due_at, creator_kind, created_by)
		SELECT $1, gen_random_uuid(), $2, 'reminder ' || i, $4::timestamptz + (i - 1) * $5::interval, 'operator', 'key:op'
		FROM generate_series(1, $3) i`, e.acme.ID, e.ada.ID, n, start, every)
	require.NoError(b, err)
	e.deliveryWorker(b, size, conc, rounds.DefaultEndpointLimit)
	loadStart := loadAverage()
	late := make([]time.Duration, 0, n)
	deadline := time.Now().Add(time.Until(start) + time.Duration(n)*every + 2*time.Minute)
	for len(late) < n && time.Now().Before(deadline) {
		ps, err := e.svc.Poll(e.ctx, e.acme.ID, "acme", e.ada.ID, 50, 30*time.Second, nil)
		require.NoError(b, err)
		for _, p := range ps {
			late = append(late, time.Since(p.DueAt))
		}
	}
	require.Len(b, late, n, "every reminder reached the runtime")
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(n), "reminders")
	b.ReportMetric(ms(late[n/2]), "p50-ms")
	b.ReportMetric(ms(late[n*99/100]), "p99-ms")
	b.ReportMetric(ms(late[n-1]), "max-ms")
	b.ReportMetric(float64(size), "pool-conns")
	b.ReportMetric(float64(conc), "in-flight")
	b.ReportMetric(loadStart, "load-start")
	b.ReportMetric(loadAverage(), "load-end")
}
