package main

import (
	"context"
	"flag"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/visorhq/visor/web/server"
	"github.com/visorhq/visor/worker"
)

func workerCommand() command {
	return command{
		name: "worker", summary: "run background jobs (River) until SIGTERM/SIGINT",
		detail: `Works the job queue in Postgres: it delivers wake-ups to AI employees'
runtimes (signed webhooks, retried, then kept as dead letters), starts due
routines and reminders, fires responsibility wake-ups (follow-ups, question
expiries and scheduled runs, each a job at its due time), pushes the
questions of responsibilities to operators' webhooks (signed, retried, held
through quiet hours), and removes
expired API keys, expired OAuth codes,
tokens and sessions, and settled wake-ups older than thirty days. On SIGTERM
or SIGINT it stops fetching and lets running jobs finish for up to
VISOR_SHUTDOWN_TIMEOUT, then cancels them. Needs Postgres and Redis and a
current schema. Run as many replicas as you like; periodic jobs run on one
elected leader. With VISOR_WORKER_HTTP_ADDR set it also serves /healthz,
/readyz and /metrics. With VISOR_SANDBOX_WORKER=true it also holds the
Docker socket and runs execute_program scripts in sandbox containers for
serve, taking them from the worker plane in Redis (VISOR_WORKER_ID names
it), and removes containers its earlier life or dead workers left behind.
With VISOR_COMPUTER_WORKER=true it also holds computer-use browser
sessions (containers of VISOR_COMPUTER_IMAGE driven over Chrome DevTools):
serve sends each session's start to any such worker and every later call
to the one holding it; it stops idle sessions, and removes the sessions of
a computer worker that stopped answering, reporting them lost.
With VISOR_MCP_STDIO_WORKER=true it also runs tenants' stdio MCP servers
in locked-down containers of the images VISOR_MCP_STDIO_IMAGES allows,
kept warm between serve's calls and removed when idle.`,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if err := parse(fs, args); err != nil {
				return err
			}
			cfg, err := LoadConfig(e.getenv)
			if err != nil {
				return err
			}
			return runWorker(ctx, e, cfg)
		},
	}
}

// runWorker runs the job worker until ctx ends: connections, stores and
// services (openApp), the probe listener, then the job runner; on the way
// out app.Close stops them in the reverse order.
func runWorker(ctx context.Context, e *env, cfg Config) error {
	log := newLogger(cfg, e.stderr)
	tp, flush, err := newTracerProvider(ctx, cfg, "worker")
	if err != nil {
		return err
	}
	defer flushTraces(ctx, flush, log)
	cfg.dbPool = cfg.Scale.WorkerDBPool
	a, err := openApp(ctx, cfg, log, tp, appNeeds{redis: true, schemaCheck: true})
	if err != nil {
		return err
	}
	defer a.Close()
	var probes *server.Server
	if cfg.WorkerHTTPAddr != "" {
		probes = server.New(server.Options{Addr: cfg.WorkerHTTPAddr, AddrVar: "VISOR_WORKER_HTTP_ADDR", Logger: log, ShutdownTimeout: cfg.ShutdownTimeout,
			ErrorHandler: a.errorHandler(), Checks: a.checks()})
		if err := probes.Listen(); err != nil {
			return err
		}
		defer probes.Close()
	}
	var metrics prometheus.Registerer
	if probes != nil {
		metrics = probes.Registry()
	}
	if err := a.startRunner(ctx, metrics); err != nil {
		return err
	}
	if probes == nil {
		<-ctx.Done()
		return nil
	}
	if e.listening != nil {
		e.listening(probes.Addr())
	}
	return probes.Serve(ctx) // until ctx ends
}

// startRunner builds the job runner with every registered job and starts
// it; app.Close drains it. metrics (nil: none) receives the lost-worker
// counters.
func (a *app) startRunner(ctx context.Context, metrics prometheus.Registerer) error {
	reg := worker.NewRegistry()
	a.registerJobs(reg)
	r, err := worker.NewRunner(a.db.Pool, reg, worker.Options{Logger: a.log, Concurrency: a.cfg.WorkerConcurrency, DrainTimeout: a.cfg.ShutdownTimeout,
		RescueAfter: a.cfg.Rounds.RescueAfter, ID: worker.NewWorkerID(a.cfg.Sandbox.WorkerID), Metrics: metrics})
	if err != nil {
		return err
	}
	if err := a.start(ctx, r); err != nil {
		return err
	}
	if err := a.startSandboxWorker(ctx); err != nil {
		return err
	}
	// The workspace worker starts first: a computer worker in the same
	// process mounts the workspaces it holds into browser sessions (and
	// stops before it at shutdown).
	if err := a.startWorkspaceWorker(ctx); err != nil {
		return err
	}
	if err := a.startComputerWorker(ctx); err != nil {
		return err
	}
	// Scheduled responsibility runs are claimed in sets, apart from the
	// job queue.
	if err := a.start(ctx, &worker.TickDispatcher{Responsibilities: a.responsibilities, Log: a.log.With("area", "responsibilities")}); err != nil {
		return err
	}
	if err := a.startStdioWorker(ctx); err != nil {
		return err
	}
	return a.startDispatcher(ctx)
}
