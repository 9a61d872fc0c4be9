package worker_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/worker"
)

// holdArgs is a job that runs until its context ends.
type holdArgs struct{}

func (holdArgs) Kind() string { return "test_hold" }

// holdWorker reports the job ids it starts on started, and holds each
// until its context ends or release is closed.
type holdWorker struct {
	river.WorkerDefaults[holdArgs]
	started chan int64
	release chan struct{}
}

func (w *holdWorker) Work(ctx context.Context, j *river.Job[holdArgs]) error {
	w.started <- j.ID
	select {
	case <-ctx.Done():
	case <-w.release:
	}
	return nil
}

func (w *holdWorker) Timeout(*river.Job[holdArgs]) time.Duration { return time.Hour }

// holdRunner starts a runner named id working holdArgs.
func holdRunner(t *testing.T, pool *postgres.DB, id string, log *slog.Logger, reg prometheus.Registerer) (*worker.Runner, chan int64) {
	t.Helper()
	return startHold(t, pool, worker.Options{Logger: log, ID: id, LostAfter: time.Second, Metrics: reg, DrainTimeout: 100 * time.Millisecond})
}

// startHold starts a runner working holdArgs. Its held jobs are released
// before it stops (a frozen runner's Stop waits for them).
func startHold(t testing.TB, pool *postgres.DB, o worker.Options) (*worker.Runner, chan int64) {
	t.Helper()
	w := &holdWorker{started: make(chan int64, 4), release: make(chan struct{})}
	jobs := worker.NewRegistry()
	river.AddWorker(jobs.Workers(), w)
	r, err := worker.NewRunner(pool.Pool, jobs, o)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(r.Stop)
	t.Cleanup(func() { close(w.release) }) // runs first
	return r, w.started
}

// TestLostWorkersJobsAreResumed: a worker that stops beating (killed,
// frozen) while running a job is declared lost by another, which resumes
// the job itself, logs the lost worker and counts it in the metrics; the
// job's errors say what happened.
func TestLostWorkersJobsAreResumed(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	a, startedA := holdRunner(t, db, "worker-a", log, nil)
	res, err := a.Client().Insert(context.Background(), holdArgs{}, nil)
	require.NoError(t, err)
	select {
	case id := <-startedA:
		require.Equal(t, res.Job.ID, id)
	case <-time.After(15 * time.Second):
		t.Fatal("worker a never started the job")
	}
	a.Freeze()

	reg := prometheus.NewRegistry()
	_, startedB := holdRunner(t, db, "worker-b", log, reg)
	select {
	case id := <-startedB:
		require.Equal(t, res.Job.ID, id, "worker b resumed worker a's job")
	case <-time.After(30 * time.Second):
		t.Fatal("worker a's job was never resumed")
	}
	var attemptedBy []string
	var errs []string
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT attempted_by, array(SELECT e->>'error' FROM unnest(errors) e)
		FROM river_job WHERE id = $1`, res.Job.ID).Scan(&attemptedBy, &errs))
	require.Equal(t, []string{"worker-a", "worker-b"}, attemptedBy)
	require.Equal(t, []string{"worker worker-a was lost (no heartbeat) while running this job; resumed"}, errs)
	require.Contains(t, logs.String(), `"msg":"worker lost: no heartbeat; its running jobs and leased deliveries were resumed","lost_worker":"worker-a","jobs":1`)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"visor_worker_lost_total/worker-a": 1, "visor_worker_resumed_jobs_total/worker-a": 1,
		"visor_worker_released_wakeups_total/worker-a": 0}, got)
	var rows int
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM worker_heartbeats WHERE id = 'worker-a'`).Scan(&rows))
	require.Zero(t, rows, "the lost worker's row is gone")
}

// TestResumedDeliveryKeepsItsWebhookID: a push whose worker is lost in
// the middle of it goes out again from another worker with the same
// webhook-id, and the wake-up is delivered once the receiver answers. The
// worker that resumed it logs and counts the lost worker and its released
// wake-up; the lost worker's late answer changes nothing.
func TestResumedDeliveryKeepsItsWebhookID(t *testing.T) {
	t.Parallel()
	e := newRoundsEnv(t, false)
	_, shown, err := e.svc.SetEndpoint(e.ctx, e.acme.ID, e.ada.ID, e.rcv.srv.URL+"/hook")
	require.NoError(t, err)
	e.rcv.setKey(shown)
	hold := make(chan struct{})
	e.rcv.mu.Lock()
	e.rcv.hold = hold
	e.rcv.mu.Unlock()
	w := e.wake(t, e.acme, e.ada.ID, rounds.Assigned)
	require.Eventually(t, func() bool { return len(e.rcv.deliveries()) == 1 }, 15*time.Second, 10*time.Millisecond)
	e.runner.Freeze()

	jobs := worker.NewRegistry()
	worker.RegisterRounds(jobs, e.svc, worker.RoundsOptions{})
	logs := &lockedBuffer{}
	reg := prometheus.NewRegistry()
	b, err := worker.NewRunner(e.db.Pool, jobs, worker.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil)), LostAfter: time.Second,
		ID: "worker-b", Metrics: reg})
	require.NoError(t, err)
	require.NoError(t, b.Start(e.ctx))
	t.Cleanup(b.Stop)
	require.Eventually(t, func() bool { return len(e.rcv.deliveries()) == 2 }, 30*time.Second, 10*time.Millisecond,
		"the lost worker's push was resumed")
	close(hold)
	got := e.waitState(t, e.acme, w.ID, rounds.Delivered)
	require.Equal(t, 1, got.Attempts, "the resumed attempt is the one counted")
	d := e.rcv.deliveries()
	require.Equal(t, w.ID.String(), d[0].id)
	require.Equal(t, d[0].id, d[1].id, "the same webhook-id")
	require.True(t, d[1].verified)

	lost := e.runner.ID()
	require.Contains(t, logs.String(), `"msg":"worker lost: no heartbeat; its running jobs and leased deliveries were resumed","lost_worker":"`+lost+`"`)
	require.Contains(t, logs.String(), `"wakeups":1`)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	counts := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			counts[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, 1.0, counts["visor_worker_lost_total/"+lost])
	require.Equal(t, 1.0, counts["visor_worker_released_wakeups_total/"+lost])
}

// lockedBuffer is a log sink safe for the runners' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *lockedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
