package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// heartbeat keeps this worker's row in worker_heartbeats fresh and watches
// the others'. River's own rescuer hands a killed worker's running jobs on
// only after their timeout and the rescue delay (minutes), and a lease on
// a wake-up ends after minutes too; the heartbeat notices the death within
// lostAfter and resumes the jobs and releases the leases at once: a
// delivery goes out again with the same webhook-id, a job runs again.
type heartbeat struct {
	pool      *pgxpool.Pool
	id        string
	lostAfter time.Duration
	log       *slog.Logger
	m         *lostMetrics
	// frozen leaves the row behind when run ends, as a killed process
	// would (tests).
	frozen atomic.Bool
}

// NewWorkerID returns a name for one life of a worker process: prefix
// (the worker's stable name, the host name if empty) and a random suffix,
// so that a restarted worker is not mistaken for its dead former life.
func NewWorkerID(prefix string) string {
	if prefix == "" {
		prefix, _ = os.Hostname()
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// run beats every lostAfter/5 and looks for lost workers as often, until
// ctx ends; then it removes this worker's row (its jobs have drained).
func (h *heartbeat) run(ctx context.Context, registered bool) {
	every := max(h.lostAfter/5, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if h.frozen.Load() {
				return
			}
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := h.pool.Exec(cctx, `DELETE FROM worker_heartbeats WHERE id = $1`, h.id); err != nil {
				h.log.Warn("remove worker heartbeat", "err", err)
			}
			return
		case <-t.C:
		}
		registered = h.beat(ctx, registered)
		h.resume(ctx)
	}
}

// beat refreshes the row. A row that was gone after this worker had
// registered means another worker declared it lost (it stalled for
// lostAfter) and resumed its running jobs: they may run twice, and the
// error says so.
func (h *heartbeat) beat(ctx context.Context, registered bool) bool {
	var inserted bool
	err := h.pool.QueryRow(ctx, `INSERT INTO worker_heartbeats (id) VALUES ($1)
		ON CONFLICT (id) DO UPDATE SET beat_at = now() RETURNING xmax = 0`, h.id).Scan(&inserted)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("worker heartbeat", "err", err)
		}
		return registered
	}
	if inserted && registered {
		h.log.Error("this worker was declared lost after missing its heartbeat; jobs it was running were resumed by another worker",
			"worker", h.id, "lost_after", h.lostAfter.String())
	}
	return true
}

// resume deletes the rows of workers silent for lostAfter and, in the same
// transaction, makes the jobs each was running available again (with an
// error entry naming it) and releases the wake-ups it held leased (due at
// once, no attempt counted). Of several workers looking at once, the one
// whose delete wins resumes them.
func (h *heartbeat) resume(ctx context.Context) {
	var found []lostWorker
	err := pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, resumeLost, h.lostAfter.Seconds(), h.id)
		if err != nil {
			return err
		}
		found, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (lostWorker, error) {
			var l lostWorker
			return l, r.Scan(&l.id, &l.jobs, &l.kinds)
		})
		if err != nil || len(found) == 0 {
			return err
		}
		ids := make([]string, len(found))
		for i, l := range found {
			ids[i] = l.id
		}
		rows, err = tx.Query(ctx, releaseLeases, ids)
		if err != nil {
			return err
		}
		released, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
			Worker string
			N      int
		}])
		for _, r := range released {
			for i := range found {
				if found[i].id == r.Worker {
					found[i].wakeups = r.N
				}
			}
		}
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("look for lost workers", "err", err)
		}
		return
	}
	for _, l := range found {
		h.log.Warn("worker lost: no heartbeat; its running jobs and leased deliveries were resumed", "lost_worker", l.id,
			"jobs", l.jobs, "kinds", l.kinds, "wakeups", l.wakeups, "lost_after", h.lostAfter.String(), "by", h.id)
		h.m.lost(l.id, l.jobs, l.wakeups)
	}
}

// lostWorker is one worker found lost, with what was resumed of it.
type lostWorker struct {
	id      string
	jobs    int
	kinds   []string
	wakeups int
}

// resumeLost deletes the rows of workers silent for $1 seconds (other
// than $2, the caller) and makes their running jobs available again.
const resumeLost = `WITH lost AS (
		DELETE FROM worker_heartbeats WHERE beat_at < now() - make_interval(secs => $1) AND id <> $2 RETURNING id
	), resumed AS (
		UPDATE river_job j SET state = 'available', scheduled_at = now(),
			errors = array_append(coalesce(j.errors, '{}'), jsonb_build_object('at', now(), 'attempt', j.attempt,
				'error', 'worker ' || lost.id || ' was lost (no heartbeat) while running this job; resumed', 'trace', ''))
		FROM lost WHERE j.state = 'running' AND j.attempted_by[cardinality(j.attempted_by)] = lost.id
		RETURNING lost.id AS worker, j.kind
	)
	SELECT lost.id, count(resumed.kind), coalesce(array_agg(DISTINCT resumed.kind) FILTER (WHERE resumed.kind IS NOT NULL), '{}')
	FROM lost LEFT JOIN resumed ON resumed.worker = lost.id GROUP BY lost.id`

// releaseLeases releases the wake-ups leased to the workers $1, in every
// tenant (workers are the deployment's): each is due again at once.
const releaseLeases = `WITH released AS (
		UPDATE wakeups w SET leased_by = NULL, next_attempt_at = now()
		FROM unnest($1::text[]) AS lost(worker)
		WHERE w.state = 'queued' AND w.leased_by = lost.worker RETURNING lost.worker
	)
	SELECT lost.worker, count(released.worker)::int
	FROM unnest($1::text[]) AS lost(worker) LEFT JOIN released ON released.worker = lost.worker GROUP BY lost.worker`

// lostMetrics count lost workers and the jobs resumed from each.
type lostMetrics struct {
	workers *prometheus.CounterVec
	jobs    *prometheus.CounterVec
	wakeups *prometheus.CounterVec
}

func newLostMetrics(reg prometheus.Registerer) *lostMetrics {
	if reg == nil {
		return nil
	}
	m := &lostMetrics{
		workers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "visor_worker_lost_total", Help: "Workers this worker declared lost (no heartbeat), by lost worker."}, []string{"lost_worker"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "visor_worker_resumed_jobs_total", Help: "Running jobs of lost workers this worker put back to work, by lost worker."}, []string{"lost_worker"}),
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "visor_worker_released_wakeups_total", Help: "Wake-ups leased to lost workers that this worker released for delivery, by lost worker."},
			[]string{"lost_worker"}),
	}
	reg.MustRegister(m.workers, m.jobs, m.wakeups)
	return m
}

func (m *lostMetrics) lost(worker string, jobs, wakeups int) {
	if m == nil {
		return
	}
	m.workers.WithLabelValues(worker).Inc()
	m.jobs.WithLabelValues(worker).Add(float64(jobs))
	m.wakeups.WithLabelValues(worker).Add(float64(wakeups))
}
