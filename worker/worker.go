// Package worker runs Visor's background work: round wake-ups delivered to
// AI employee runtimes and scheduled responsibility runs, both claimed in
// sets from their tables (deliveries.go, ticks.go), and jobs on River, the
// Postgres-backed queue: responsibility wake-ups and question pushes
// (responsibilities.go) and housekeeping (expired OAuth rows, long-revoked
// API keys, old wake-ups).
// Script runs and browser sessions do not use River: the worker plane hands
// them to sandbox and computer workers over Redis. Each area adds its job
// kinds and periodic jobs to a Registry; cmd/visor builds the Registry and either runs it (`visor
// worker`, `visor dev`) or only inserts jobs (`visor serve`).
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/visorhq/visor/services/lifecycle"
)

// Registry collects job workers, queues and periodic jobs before a Runner
// starts. It is not safe for concurrent use; fill it during wiring.
type Registry struct {
	workers  *river.Workers
	periodic []*river.PeriodicJob
	queues   map[string]int
	planes   []func(id string, log *slog.Logger, drain time.Duration) plane
}

// plane is work a Runner runs beside its jobs under its worker id (the
// claimers of Deliveries): started after the heartbeat, stopped before it.
type plane interface {
	lifecycle.Service
	// Freeze stops taking new work and leaves the work in flight running,
	// as a stalled process would (tests).
	Freeze()
}

// addPlane adds work the Runner builds with its id, logger and drain
// timeout.
func (r *Registry) addPlane(p func(id string, log *slog.Logger, drain time.Duration) plane) {
	r.planes = append(r.planes, p)
}

// NewRegistry returns a Registry with the default queue.
func NewRegistry() *Registry {
	return &Registry{workers: river.NewWorkers(), queues: map[string]int{}}
}

// Workers returns River's worker bundle; add to it with
// river.AddWorker(reg.Workers(), w).
func (r *Registry) Workers() *river.Workers { return r.workers }

// AddPeriodic schedules a job that the elected leader inserts on its
// schedule (river.NewPeriodicJob).
func (r *Registry) AddPeriodic(j *river.PeriodicJob) { r.periodic = append(r.periodic, j) }

// AddQueue declares a queue with its own concurrency, for job kinds that
// must not starve the default queue (sandbox runs, browser sessions).
func (r *Registry) AddQueue(name string, maxWorkers int) { r.queues[name] = maxWorkers }

// Options configure a Runner.
type Options struct {
	Logger *slog.Logger
	// Concurrency is the default queue's worker count (10 if zero).
	Concurrency int
	// DrainTimeout bounds how long Stop lets running jobs finish before it
	// cancels them (30 s if zero).
	DrainTimeout time.Duration
	// RescueAfter is how long a job may stay running past its own timeout
	// before the leader hands it to another worker: the jobs of a worker
	// that was killed (2 min if zero). Below a minute it also becomes the
	// timeout of jobs that set none (River requires it).
	RescueAfter time.Duration
	// ID names this worker in River (attempted_by) and in its heartbeat;
	// NewWorkerID("") if empty.
	ID string
	// LostAfter is how long a worker may miss its heartbeat before another
	// resumes the jobs it was running (5 s if zero).
	LostAfter time.Duration
	// Metrics, when set, receives the lost-worker counters.
	Metrics prometheus.Registerer
}

// Runner works jobs. Start it once; Stop drains it.
type Runner struct {
	client *river.Client[pgx.Tx]
	log    *slog.Logger
	drain  time.Duration
	life   lifecycle.Base
	beat   *heartbeat
	planes []plane
	// beating ends the heartbeat, after the jobs drained; beaten is closed
	// when it has removed its row.
	beating context.CancelFunc
	beaten  chan struct{}
}

// NewRunner returns a Runner for the registered jobs on pool.
func NewRunner(pool *pgxpool.Pool, reg *Registry, o Options) (*Runner, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.RescueAfter <= 0 {
		o.RescueAfter = 2 * time.Minute
	}
	if o.ID == "" {
		o.ID = NewWorkerID("")
	}
	if o.LostAfter <= 0 {
		o.LostAfter = 5 * time.Second
	}
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.Concurrency}}
	for name, n := range maps.All(reg.queues) {
		queues[name] = river.QueueConfig{MaxWorkers: n}
	}
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger: riverLogger(o.Logger), Queues: queues, Workers: reg.workers, PeriodicJobs: reg.periodic,
		RescueStuckJobsAfter: o.RescueAfter, JobTimeout: min(o.RescueAfter, river.JobTimeoutDefault), ID: o.ID,
	})
	if err != nil {
		return nil, fmt.Errorf("configure job runner: %w", err)
	}
	hb := &heartbeat{pool: pool, id: o.ID, lostAfter: o.LostAfter, log: o.Logger, m: newLostMetrics(o.Metrics)}
	r := &Runner{client: c, log: o.Logger, drain: o.DrainTimeout, beat: hb}
	for _, p := range reg.planes {
		r.planes = append(r.planes, p(o.ID, o.Logger, o.DrainTimeout))
	}
	return r, nil
}

// ID returns the name this worker runs under (River's attempted_by).
func (r *Runner) ID() string { return r.beat.id }

// NewInserter returns a River client that only inserts jobs, for processes
// that enqueue work (`serve`) but do not run it. Use InsertTx to enqueue in
// the transaction of the change that causes the job.
func NewInserter(pool *pgxpool.Pool, log *slog.Logger) (*river.Client[pgx.Tx], error) {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: riverLogger(log)})
	if err != nil {
		return nil, fmt.Errorf("configure job inserter: %w", err)
	}
	return c, nil
}

// Client returns the underlying River client, for inserting jobs.
func (r *Runner) Client() *river.Client[pgx.Tx] { return r.client }

// Start begins fetching and working jobs. Jobs keep running until Stop,
// not until ctx ends. It runs once (lifecycle.Base).
func (r *Runner) Start(ctx context.Context) error {
	rctx, err := r.life.Begin(ctx)
	if err != nil {
		return err
	}
	// The heartbeat outlives ctx: it beats while jobs drain, and stops
	// after them.
	bctx, beating := context.WithCancel(context.WithoutCancel(rctx))
	r.beating, r.beaten = beating, make(chan struct{})
	registered := r.beat.beat(bctx, false) // before the first job is fetched
	r.beat.resume(bctx)
	go func() {
		defer close(r.beaten)
		r.beat.run(bctx, registered)
	}()
	if err := r.client.Start(rctx); err != nil {
		beating()
		<-r.beaten
		return fmt.Errorf("start job runner: %w", err)
	}
	r.life.OnStop(r.stop)
	for _, p := range r.planes {
		if err := p.Start(rctx); err != nil {
			return fmt.Errorf("start job runner: %w", err)
		}
	}
	r.log.Info("job runner started", "worker", r.beat.id)
	return nil
}

// Stop stops fetching and claiming and waits up to the drain timeout for
// running jobs and deliveries to finish, then cancels those still running
// (their context ends; deliveries are released) and waits for them to
// return. It is safe to call twice.
func (r *Runner) Stop() { r.life.Stop() }

func (r *Runner) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), r.drain)
	defer cancel()
	defer func() { r.beating(); <-r.beaten }()
	var planes sync.WaitGroup
	for _, p := range r.planes {
		planes.Go(p.Stop)
	}
	defer planes.Wait()
	err := r.client.Stop(ctx)
	if ctx.Err() != nil {
		r.log.Warn("job runner drain timed out; cancelling running jobs")
		err = r.client.StopAndCancel(context.WithoutCancel(ctx))
	}
	if err != nil {
		r.log.Error("stop job runner", "err", err)
		return
	}
	r.log.Info("job runner stopped")
}
