// Package worker runs Visor's background jobs on River, the Postgres-backed
// queue. Today those are housekeeping: expired OAuth rows (auth/oauth) and
// long-revoked API keys (PruneKeysWorker); the slow tool families (sandbox
// runs, computer-use sessions, responsibility wake-ups) will join them. Each
// area adds its job kinds and periodic jobs to a Registry; cmd/visor builds the Registry and either runs it (`visor
// worker`, `visor dev`) or only inserts jobs (`visor serve`).
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Registry collects job workers, queues and periodic jobs before a Runner
// starts. It is not safe for concurrent use; fill it during wiring.
type Registry struct {
	workers  *river.Workers
	periodic []*river.PeriodicJob
	queues   map[string]int
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
}

// Runner works jobs. Start it once; Stop drains it.
type Runner struct {
	client *river.Client[pgx.Tx]
	log    *slog.Logger
}

// NewRunner returns a Runner for the registered jobs on pool.
func NewRunner(pool *pgxpool.Pool, reg *Registry, o Options) (*Runner, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.Concurrency}}
	for name, n := range maps.All(reg.queues) {
		queues[name] = river.QueueConfig{MaxWorkers: n}
	}
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger: riverLogger(o.Logger), Queues: queues, Workers: reg.workers, PeriodicJobs: reg.periodic,
	})
	if err != nil {
		return nil, fmt.Errorf("configure job runner: %w", err)
	}
	return &Runner{client: c, log: o.Logger}, nil
}

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
// not until ctx ends.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start job runner: %w", err)
	}
	r.log.Info("job runner started")
	return nil
}

// Stop stops fetching and waits for running jobs to finish. When ctx ends
// first, running jobs are cancelled (their context ends) and Stop waits for
// them to return.
func (r *Runner) Stop(ctx context.Context) error {
	err := r.client.Stop(ctx)
	if ctx.Err() != nil {
		r.log.Warn("job runner drain timed out; cancelling running jobs")
		err = r.client.StopAndCancel(context.WithoutCancel(ctx))
	}
	if err != nil {
		return fmt.Errorf("stop job runner: %w", err)
	}
	r.log.Info("job runner stopped")
	return nil
}
