package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/visorhq/visor/web/server"
)

func serveCommand() command {
	return command{
		name: "serve", summary: "run the HTTP edge: MCP, OAuth, admin API, health and metrics",
		detail: `Serves HTTP on VISOR_HTTP_ADDR until SIGTERM or SIGINT, then drains in-flight
requests for up to VISOR_SHUTDOWN_TIMEOUT. Needs Postgres and Redis, and refuses
to start on a schema that is behind (run ` + "`visor migrate up`" + ` first). Run as many
replicas as you like behind a load balancer.`,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if err := parse(fs, args); err != nil {
				return err
			}
			cfg, err := LoadConfig(e.getenv)
			if err != nil {
				return err
			}
			return serve(ctx, e, cfg, newLogger(cfg, e.stderr), serveOptions{})
		},
	}
}

type serveOptions struct {
	withWorker bool                               // run the job worker in-process (`visor dev`)
	onReady    func(a *app, baseURL string) error // called once listening
	service    string
}

// serve runs the HTTP edge (and, for dev, the worker) until ctx ends:
// connections, stores and services (openApp), the listener, the edges and
// their background services, then the worker; on the way out the server
// drains and app.Close stops everything in the reverse order.
func serve(ctx context.Context, e *env, cfg Config, log *slog.Logger, o serveOptions) (err error) {
	if o.service == "" {
		o.service = "serve"
	}
	tp, flush, err := newTracerProvider(ctx, cfg, o.service)
	if err != nil {
		return err
	}
	defer flushTraces(ctx, flush, log)
	a, err := openApp(ctx, cfg, log, tp, appNeeds{redis: true, schemaCheck: true})
	if err != nil {
		return err
	}
	defer a.Close()

	s := server.New(server.Options{
		Addr: cfg.HTTPAddr, Logger: log, BodyLimit: cfg.BodyLimit, TrustedProxies: cfg.TrustedProxies, ShutdownTimeout: cfg.ShutdownTimeout,
		TracerProvider: tp, ErrorHandler: a.errorHandler(), Checks: a.checks(), MaxConns: cfg.Scale.MaxConns, H2C: cfg.Scale.H2C,
	})
	log.Info("connection and stream limits", "open_files", cfg.Scale.OpenFiles, "max_connections", cfg.Scale.MaxConns,
		"max_streams", cfg.Scale.MaxStreams, "max_streams_per_credential", cfg.Scale.StreamsPerCred)
	if err := s.Listen(); err != nil {
		return err
	}
	defer s.Close()
	base := cfg.baseURL(s.Addr())
	if err := a.edges(ctx, s, base); err != nil {
		return err
	}
	if o.withWorker {
		if err := a.startRunner(ctx, s.Registry()); err != nil {
			return err
		}
	}
	if e.listening != nil {
		e.listening(s.Addr())
	}
	if o.onReady != nil {
		if err := o.onReady(a, base); err != nil {
			return err
		}
	}
	return s.Serve(ctx)
}

// flushTraces sends the spans still buffered, after ctx has ended.
func flushTraces(ctx context.Context, flush func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := flush(ctx); err != nil {
		log.Warn("flush traces", "err", err)
	}
}

// checks are the readiness probes: Postgres and Redis answer.
func (a *app) checks() []server.Check {
	return []server.Check{
		{Name: "postgres", Fn: func(ctx context.Context) error { return a.db.Pool.Ping(ctx) }},
		{Name: "redis", Fn: a.rdb.Ping},
	}
}
