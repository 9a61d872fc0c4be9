package main

import (
	"context"
	"flag"

	"github.com/visorhq/visor/web/server"
	"github.com/visorhq/visor/worker"
)

func workerCommand() command {
	return command{
		name: "worker", summary: "run background jobs (River) until SIGTERM/SIGINT",
		detail: `Works the job queue in Postgres: sandbox runs, computer-use sessions,
responsibility wake-ups, grant expiry and cleanup. On SIGTERM or SIGINT it stops
fetching and lets running jobs finish for up to VISOR_SHUTDOWN_TIMEOUT, then
cancels them. Needs Postgres and Redis and a current schema. Run as many
replicas as you like; periodic jobs run on one elected leader. With
VISOR_WORKER_HTTP_ADDR set it also serves /healthz, /readyz and /metrics.`,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if err := parse(fs, args); err != nil {
				return err
			}
			cfg, err := LoadConfig(e.getenv)
			if err != nil {
				return err
			}
			log := newLogger(cfg, e.stderr)
			tp, flush, err := newTracerProvider(ctx, cfg, "worker")
			if err != nil {
				return err
			}
			defer flushTraces(flush, log)
			a, err := openApp(ctx, cfg, log, tp, appNeeds{redis: true, schemaCheck: true})
			if err != nil {
				return err
			}
			defer a.Close()
			r, err := a.newRunner()
			if err != nil {
				return err
			}
			var probes *server.Server
			if cfg.WorkerHTTPAddr != "" {
				probes = server.New(server.Options{Addr: cfg.WorkerHTTPAddr, AddrVar: "VISOR_WORKER_HTTP_ADDR", Logger: log, ShutdownTimeout: cfg.ShutdownTimeout,
					ErrorHandler: a.errorHandler(), Checks: a.checks()})
				if err := probes.Listen(); err != nil {
					return err
				}
				defer probes.Close()
				if e.listening != nil {
					e.listening(probes.Addr())
				}
			}
			if err := r.Start(ctx); err != nil {
				return err
			}
			var err2 error
			if probes != nil {
				err2 = probes.Serve(ctx) // until ctx ends
			} else {
				<-ctx.Done()
			}
			stopRunner(r, cfg, log)
			return err2
		},
	}
}

// newRunner builds the job runner with every registered job.
func (a *app) newRunner() (*worker.Runner, error) {
	reg := worker.NewRegistry()
	a.registerJobs(reg)
	return worker.NewRunner(a.db.Pool, reg, worker.Options{Logger: a.log, Concurrency: a.cfg.WorkerConcurrency})
}
