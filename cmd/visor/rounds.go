package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/longpoll"
	"github.com/visorhq/visor/web/server"
	"github.com/visorhq/visor/worker"
)

// RoundsConfig is the delivery of rounds' part of Config.
type RoundsConfig struct {
	DevHosts    []string       // VISOR_WEBHOOK_DEV_HOSTS
	RootCAs     *x509.CertPool // VISOR_WEBHOOK_CA_FILE (nil: the system roots)
	Timeout     time.Duration  // VISOR_WEBHOOK_TIMEOUT
	RoundTTL    time.Duration  // VISOR_ROUND_TTL
	RescueAfter time.Duration  // VISOR_WORKER_RESCUE_AFTER
	// The claimers of `visor worker` that lease due wake-ups in sets.
	Claimers   int           // VISOR_WORKER_ROUNDS_CLAIMERS
	ClaimBatch int           // VISOR_WORKER_ROUNDS_BATCH
	ClaimEvery time.Duration // VISOR_WORKER_ROUNDS_POLL
	Lease      time.Duration // VISOR_WORKER_ROUNDS_LEASE
}

func loadRoundsConfig(get func(string) string, bad func(name, format string, args ...any)) RoundsConfig {
	var c RoundsConfig
	var err error
	for _, h := range strings.Split(get("VISOR_WEBHOOK_DEV_HOSTS"), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			c.DevHosts = append(c.DevHosts, h)
		}
	}
	if f := get("VISOR_WEBHOOK_CA_FILE"); f != "" {
		pem, err := os.ReadFile(f)
		pool, _ := x509.SystemCertPool()
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			bad("VISOR_WEBHOOK_CA_FILE", "must name a readable file of PEM certificates")
		}
		c.RootCAs = pool
	}
	if c.Timeout, err = time.ParseDuration(get("VISOR_WEBHOOK_TIMEOUT")); err != nil || c.Timeout < 100*time.Millisecond || c.Timeout > time.Minute {
		bad("VISOR_WEBHOOK_TIMEOUT", "%q must be a duration between 100ms and 1m, like 10s", get("VISOR_WEBHOOK_TIMEOUT"))
	}
	if c.RoundTTL, err = time.ParseDuration(get("VISOR_ROUND_TTL")); err != nil || c.RoundTTL < time.Minute || c.RoundTTL > auth.MaxRoundTTL {
		bad("VISOR_ROUND_TTL", "%q must be a duration between 1m and 24h, like 1h", get("VISOR_ROUND_TTL"))
	}
	if c.RescueAfter, err = time.ParseDuration(get("VISOR_WORKER_RESCUE_AFTER")); err != nil || c.RescueAfter < time.Second {
		bad("VISOR_WORKER_RESCUE_AFTER", "%q must be a duration of at least 1s, like 2m", get("VISOR_WORKER_RESCUE_AFTER"))
	}
	loadClaimConfig(&c, get, bad)
	return c
}

// loadClaimConfig reads the settings of the claimers that lease due
// wake-ups. A lease must outlast an attempt (the webhook timeout and a
// margin), or a slow push would be taken over while it runs.
func loadClaimConfig(c *RoundsConfig, get func(string) string, bad func(name, format string, args ...any)) {
	num := func(name string, lo, hi int) int {
		n, err := strconv.Atoi(get(name))
		if err != nil || n < lo || n > hi {
			bad(name, "%q must be a number %d-%d", get(name), lo, hi)
		}
		return n
	}
	c.Claimers = num("VISOR_WORKER_ROUNDS_CLAIMERS", 1, 64)
	c.ClaimBatch = num("VISOR_WORKER_ROUNDS_BATCH", 1, 10_000)
	var err error
	if c.ClaimEvery, err = time.ParseDuration(get("VISOR_WORKER_ROUNDS_POLL")); err != nil || c.ClaimEvery < 10*time.Millisecond || c.ClaimEvery > time.Minute {
		bad("VISOR_WORKER_ROUNDS_POLL", "%q must be a duration between 10ms and 1m, like 100ms", get("VISOR_WORKER_ROUNDS_POLL"))
	}
	floor := c.attemptLimit() + 10*time.Second
	if c.Lease, err = time.ParseDuration(get("VISOR_WORKER_ROUNDS_LEASE")); err != nil || c.Lease < floor || c.Lease > time.Hour {
		bad("VISOR_WORKER_ROUNDS_LEASE", "%q must be a duration of at least %s (VISOR_WEBHOOK_TIMEOUT and 15s) and at most 1h, like 2m",
			get("VISOR_WORKER_ROUNDS_LEASE"), floor)
	}
}

// attemptLimit bounds one delivery attempt: the webhook's own timeout and
// a margin for the wait for a free push to its endpoint.
func (c RoundsConfig) attemptLimit() time.Duration { return c.Timeout + 5*time.Second }

// newRounds builds the delivery of rounds: the job inserter (the jobs of
// responsibilities), the rounds store and service. Wake-ups need no job:
// the workers' claimers take them from their table.
func (a *app) newRounds() error {
	ins, err := worker.NewInserter(a.db.Pool, a.log)
	if err != nil {
		return err
	}
	a.jobs = ins
	base := a.cfg.BaseURL
	if base == "" {
		_, port, _ := net.SplitHostPort(a.cfg.HTTPAddr)
		base = "http://" + net.JoinHostPort("localhost", port)
	}
	urls := auth.NewURLs(base)
	rc := a.cfg.Rounds
	minter := auth.NewRounds(a.stores.credentials, a.stores.identity)
	minter.Changes = a.publisher()
	a.bell = rounds.NewBell()
	a.stores.rounds = postgres.NewRoundsStore(a.db)
	a.rounds = rounds.NewService(rounds.Config{
		Store: a.stores.rounds, Minter: minter,
		HTTP: egress.New(egress.Config{AllowPrivateHosts: rc.DevHosts, RootCAs: rc.RootCAs, Timeout: rc.Timeout,
			IdleConnsPerHost: rounds.DefaultEndpointLimit}), // a busy endpoint's pushes reuse their connections
		MCPURL: urls.Resource, RoundTTL: rc.RoundTTL, DevHosts: rc.DevHosts,
		Changes: a.publisher(), Logger: a.log.With("area", "rounds"),
	})
	a.rounds.SetBell(a.bell)
	return nil
}

// mountRuntime serves the runtimes' long-poll, woken by Postgres
// notifications from whichever process readies a wake-up. Wake-ups then
// name the MCP URL of the address actually bound (`visor dev` on port 0).
func (a *app) mountRuntime(ctx context.Context, s *server.Server, resolver *auth.Resolver) error {
	a.rounds.SetMCPURL(resolver.URLs().Resource)
	if err := a.start(ctx, postgres.NewWakeupListener(a.db, a.bell, a.log.With("area", "rounds"))); err != nil {
		return fmt.Errorf("listen for wake-ups: %w", err)
	}
	h := longpoll.New(a.rounds, a.stores.audit)
	h.Register(s.Echo(), resolver.Middleware(""))
	bell := a.bell
	s.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "visor_rounds_polls_waiting",
		Help: "Runtime long-polls waiting on this replica for a wake-up."}, func() float64 { return float64(bell.Waiting()) }))
	longpoll.NewSpend(a.responsibilities, a.stores.audit).Register(s.Echo(), resolver.Middleware(""))
	s.OnShutdown(h.Close)
	return nil
}

// registerRoundJobs adds the delivery of wake-ups (claimed in sets under
// the runner's worker id); startDispatcher fires due routines and
// reminders in a worker process.
func (a *app) registerRoundJobs(reg *worker.Registry) {
	rc := a.cfg.Rounds
	worker.RegisterRounds(reg, a.rounds, worker.RoundsOptions{Limit: rc.attemptLimit(), Concurrency: a.cfg.Scale.RoundsConcurrency,
		Claimers: rc.Claimers, Batch: rc.ClaimBatch, Every: rc.ClaimEvery, Lease: rc.Lease})
	worker.RegisterWakeupPrune(reg, a.stores.rounds)
}

func (a *app) startDispatcher(ctx context.Context) error {
	return a.start(ctx, &worker.Dispatcher{Board: a.board, Log: a.log.With("area", "rounds")})
}
