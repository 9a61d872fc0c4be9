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
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
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
	// The routine's next run is tomorrow, so only a second delivery job for
	// this slot could still arrive; once every delivery job is done, none
	// can.
	testsignal.Until(t, 20*time.Second, 20*time.Millisecond, "every delivery job finished", func() bool {
		var left int
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM river_job WHERE kind = 'deliver_wakeup'
			AND state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&left))
		return left == 0
	})
	require.Len(t, e.rcv.deliveries(), 1, "one slot, one run")
}

// BenchmarkWakeupLateness schedules 1,000 reminders due over ten seconds
// and measures, for each, the time from its due time to its receipt by a
// webhook receiver (dispatcher every 250 ms, River delivery, TLS push).
func BenchmarkWakeupLateness(b *testing.B) {
	for b.Loop() {
		lateness(b)
	}
}

func lateness(b *testing.B) {
	n, every := benchEnv("VISOR_BENCH_REMINDERS", 1000), time.Duration(benchEnv("VISOR_BENCH_EVERY_MS", 10))*time.Millisecond
	if os.Getenv("VISOR_BENCH_EVERY_MS") == "0" {
		every = 0 // all due at the same instant
	}
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
	// Written a day ahead, then all moved to start a second from now at
	// once, so the time spent writing them never counts as lateness.
	far := time.Now().Add(24 * time.Hour)
	for i := range n {
		r := board.Reminder{ID: uuid.New(), TenantID: e.acme.ID, AgentID: e.ada.ID, Text: fmt.Sprintf("reminder %d", i),
			DueAt: far.Add(time.Duration(i) * every), CreatorKind: board.ByOperator, CreatedBy: "key:op"}
		require.NoError(b, e.boardStore.CreateReminder(e.ctx, &r))
	}
	start := time.Now().Add(time.Second)
	_, err = e.db.Pool.Exec(e.ctx, `UPDATE reminders SET due_at = due_at - $1::interval`, far.Sub(start).String())
	require.NoError(b, err)
	d := &worker.Dispatcher{Board: e.board, Log: slog.New(slog.DiscardHandler)}
	require.NoError(b, d.Start(e.ctx))
	defer d.Stop()
	testsignal.Until(b, max(2*time.Minute, time.Duration(n)*30*time.Millisecond), 50*time.Millisecond, "every reminder delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(late) >= n
	})
	mu.Lock()
	defer mu.Unlock()
	require.Len(b, late, n, "every reminder delivered")
	slices.Sort(late)
	p50, p99, pmax := late[n/2], late[n*99/100], late[n-1]
	b.ReportMetric(float64(p50)/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
	b.ReportMetric(float64(pmax)/float64(time.Millisecond), "max-ms")
	b.ReportMetric(loadAverage(), "load-end")
	fmt.Printf("wake-up lateness over %d reminders: p50 %s, p99 %s, max %s\n", n, p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		pmax.Round(time.Millisecond))
}
