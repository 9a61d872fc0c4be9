package worker_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/worker"
)

// deliveryRunner starts a runner of e's rounds service whose Stop waits
// drain for deliveries in flight.
func (e *roundsEnv) deliveryRunner(t *testing.T, id string, drain time.Duration) *worker.Runner {
	t.Helper()
	reg := worker.NewRegistry()
	worker.RegisterRounds(reg, e.svc, worker.RoundsOptions{Attempts: 3, Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	r, err := worker.NewRunner(e.db.Pool, reg, worker.Options{Logger: slog.New(slog.DiscardHandler), ID: id, DrainTimeout: drain})
	require.NoError(t, err)
	require.NoError(t, r.Start(e.ctx))
	t.Cleanup(r.Stop)
	return r
}

// holdPushes makes the receiver hold every push until the returned
// channel is closed.
func (e *roundsEnv) holdPushes() chan struct{} {
	hold := make(chan struct{})
	e.rcv.mu.Lock()
	e.rcv.hold = hold
	e.rcv.mu.Unlock()
	return hold
}

// leasedTo counts the tenant's queued wake-ups leased to worker.
func (e *roundsEnv) leasedTo(t *testing.T, worker string) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM wakeups WHERE tenant_id = $1 AND state = 'queued' AND leased_by = $2`,
		e.acme.ID, worker).Scan(&n))
	return n
}

// TestStoppingWorkerFinishesItsDeliveries: a worker told to stop while
// its pushes are in flight claims nothing more, lets them finish within
// its drain and records each outcome before Stop returns: each wake-up is
// delivered once, with one attempt, and no lease is left.
func TestStoppingWorkerFinishesItsDeliveries(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	e.runner.Stop()
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)
	hold := e.holdPushes()
	a := e.deliveryRunner(t, "worker-a", time.Minute)
	const n = 5
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = e.wake(t, e.acme, e.ada.ID, rounds.Assigned).ID
	}
	testsignal.Until(t, 15*time.Second, 10*time.Millisecond, "every push in flight", func() bool { return len(e.rcv.deliveries()) == n })
	require.Equal(t, n, e.leasedTo(t, "worker-a"))
	stopped := make(chan struct{})
	go func() { a.Stop(); close(stopped) }()
	close(hold)
	<-stopped
	for _, id := range ids {
		w, err := e.svc.Wakeup(e.ctx, e.acme.ID, id)
		require.NoError(t, err)
		require.Equal(t, rounds.Delivered, w.State, "recorded before Stop returned")
		require.Equal(t, 1, w.Attempts)
	}
	require.Zero(t, e.leasedTo(t, "worker-a"))
	require.Len(t, e.rcv.deliveries(), n, "each pushed once")
}

// TestStoppingWorkerReleasesWhatItCannotFinish: pushes still unanswered
// when a stopping worker's drain runs out are cut off and their wake-ups
// released at once (queued, due, no attempt counted, no lease), not left
// for the lease to run out; another worker then delivers each with the
// same webhook-id. Nothing is lost.
func TestStoppingWorkerReleasesWhatItCannotFinish(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	e.runner.Stop()
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)
	hold := e.holdPushes()
	a := e.deliveryRunner(t, "worker-a", 100*time.Millisecond)
	const n = 5
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = e.wake(t, e.acme, e.ada.ID, rounds.Assigned).ID
	}
	testsignal.Until(t, 15*time.Second, 10*time.Millisecond, "every push in flight", func() bool { return len(e.rcv.deliveries()) == n })
	a.Stop()
	for _, id := range ids {
		var state string
		var attempts int
		var leased *string
		var due bool
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT state, attempts, leased_by, next_attempt_at <= now() FROM wakeups
			WHERE tenant_id = $1 AND id = $2`, e.acme.ID, id).Scan(&state, &attempts, &leased, &due))
		require.Equal(t, "queued", state)
		require.Zero(t, attempts, "a cut-off push is not counted as an attempt")
		require.Nil(t, leased, "released, not left leased")
		require.True(t, due, "due again at once")
	}

	e.rcv.mu.Lock()
	e.rcv.hold = nil
	e.rcv.mu.Unlock()
	close(hold)
	e.deliveryRunner(t, "worker-b", time.Minute)
	for _, id := range ids {
		w := e.waitState(t, e.acme, id, rounds.Delivered)
		require.Equal(t, 1, w.Attempts)
	}
	seen := map[string]int{}
	for _, d := range e.rcv.deliveries() {
		require.True(t, d.verified)
		seen[d.id]++
	}
	for _, id := range ids {
		require.Equal(t, 2, seen[id.String()], "cut off once, then delivered by worker b with the same webhook-id")
	}
}

// TestJobsFromBeforeTheClaimersDeliverOnce: a deliver_wakeup job left
// from an older release (or inserted by an older replica during an
// upgrade) completes without a push of its own; its wake-up is delivered
// once, by the claimers.
func TestJobsFromBeforeTheClaimersDeliverOnce(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)
	w := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	res, err := e.runner.Client().Insert(e.ctx, worker.DeliverArgs{TenantID: w.TenantID, WakeupID: w.ID},
		&river.InsertOpts{Queue: worker.RoundsQueue})
	require.NoError(t, err)
	e.waitState(t, e.acme, w.ID, rounds.Delivered)
	testsignal.Until(t, 15*time.Second, 10*time.Millisecond, "the old job completed", func() bool {
		var state string
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT state FROM river_job WHERE id = $1`, res.Job.ID).Scan(&state))
		return state == "completed"
	})
	require.Len(t, e.rcv.deliveries(), 1, "delivered once")
}

// TestLostWorkersLeasesAreReleased: the worker that finds another lost
// releases the wake-ups leased to it, in every tenant, due at once and
// with no attempt counted; a live worker's leases are left alone.
func TestLostWorkersLeasesAreReleased(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	e.runner.Stop()
	lost := []uuid.UUID{e.wake(t, e.acme, e.ada.ID, rounds.Assigned).ID, e.wake(t, e.globex, e.gil.ID, rounds.Assigned).ID}
	live := e.wake(t, e.acme, e.bob.ID, rounds.Assigned).ID
	_, err := e.db.Pool.Exec(e.ctx, `UPDATE wakeups SET next_attempt_at = now() + interval '1 hour', attempts = 1,
		leased_by = CASE WHEN id = $1 THEN 'worker-c' ELSE 'worker-a' END`, live)
	require.NoError(t, err)
	_, err = e.db.Pool.Exec(e.ctx, `INSERT INTO worker_heartbeats (id, beat_at) VALUES ('worker-a', now() - interval '1 minute')`)
	require.NoError(t, err)

	startHold(t, e.db, worker.Options{Logger: slog.New(slog.DiscardHandler), ID: "worker-b", LostAfter: time.Second})
	testsignal.Until(t, 15*time.Second, 10*time.Millisecond, "worker a's leases released", func() bool {
		var n int
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM wakeups WHERE leased_by = 'worker-a'`).Scan(&n))
		return n == 0
	})
	for _, id := range lost {
		var attempts int
		var due bool
		require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT attempts, next_attempt_at <= now() FROM wakeups WHERE id = $1 AND state = 'queued'`,
			id).Scan(&attempts, &due))
		require.Equal(t, 1, attempts, "no attempt counted")
		require.True(t, due, "due again at once")
	}
	var holder string
	var due bool
	require.NoError(t, e.db.Pool.QueryRow(e.ctx, `SELECT leased_by, next_attempt_at <= now() FROM wakeups WHERE id = $1`, live).Scan(&holder, &due))
	require.Equal(t, "worker-c", holder, "a live worker's lease stays")
	require.False(t, due)
}

// TestClaimedWakeupsWithNothingToDeliverAreCancelled: a wake-up whose task
// was finished or whose employee went to the trash before its claim is
// cancelled, not pushed; without an endpoint it turns ready.
func TestClaimedWakeupsWithNothingToDeliverAreCancelled(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	e.runner.Stop()
	_, secret, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, uuid.Nil, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(secret)
	finished := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	_, err = e.db.Pool.Exec(e.ctx, `UPDATE tasks SET status = 'done', finished_at = now() WHERE tenant_id = $1 AND id = $2`,
		e.acme.ID, finished.TaskID)
	require.NoError(t, err)
	trashed := e.wake(t, e.acme, e.bob.ID, rounds.Assigned)
	_, err = e.db.Pool.Exec(e.ctx, `UPDATE agents SET status = 'trashed' WHERE tenant_id = $1 AND id = $2`, e.acme.ID, e.bob.ID)
	require.NoError(t, err)
	pulled := e.wake(t, e.globex, e.gil.ID, rounds.Assigned) // globex has no endpoint

	e.deliveryRunner(t, "worker-a", time.Minute)
	e.waitState(t, e.acme, finished.ID, rounds.Cancelled)
	e.waitState(t, e.acme, trashed.ID, rounds.Cancelled)
	e.waitState(t, e.globex, pulled.ID, rounds.Ready)
	require.Empty(t, e.rcv.deliveries(), "nothing pushed")
}
