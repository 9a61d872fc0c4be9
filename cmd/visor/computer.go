package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/visorhq/visor/docker/browser"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/storage/redisx"
)

// ComputerConfig is computer use's part of Config.
type ComputerConfig struct {
	Worker      bool                  // VISOR_COMPUTER_WORKER: this worker runs browser sessions
	Image       string                // VISOR_COMPUTER_IMAGE: the browser image
	MaxSessions int                   // VISOR_COMPUTER_MAX_SESSIONS
	SweepEvery  time.Duration         // VISOR_COMPUTER_SWEEP_EVERY
	DevHosts    map[string]netip.Addr // VISOR_COMPUTER_DEV_HOSTS: host=address pins used instead of DNS
	TrustSPKI   []string              // VISOR_COMPUTER_DEV_TRUST_SPKI: certificate keys Chromium accepts unverified
}

func loadComputerConfig(get func(string) string, bad func(name, format string, args ...any)) ComputerConfig {
	c := ComputerConfig{Image: get("VISOR_COMPUTER_IMAGE")}
	var err error
	if c.Worker, err = strconv.ParseBool(get("VISOR_COMPUTER_WORKER")); err != nil {
		bad("VISOR_COMPUTER_WORKER", "%q must be true or false", get("VISOR_COMPUTER_WORKER"))
	}
	if c.Worker && c.Image == "" {
		bad("VISOR_COMPUTER_IMAGE", "a computer worker (VISOR_COMPUTER_WORKER=true) needs the browser image's tag")
	}
	if c.MaxSessions, err = strconv.Atoi(get("VISOR_COMPUTER_MAX_SESSIONS")); err != nil || c.MaxSessions < 1 || c.MaxSessions > 1000 {
		bad("VISOR_COMPUTER_MAX_SESSIONS", "%q must be a number 1-1000", get("VISOR_COMPUTER_MAX_SESSIONS"))
	}
	if c.SweepEvery, err = time.ParseDuration(get("VISOR_COMPUTER_SWEEP_EVERY")); err != nil || c.SweepEvery < time.Second || c.SweepEvery > time.Hour {
		bad("VISOR_COMPUTER_SWEEP_EVERY", "%q must be a duration from 1s to 1h", get("VISOR_COMPUTER_SWEEP_EVERY"))
	}
	for _, pair := range strings.Split(get("VISOR_COMPUTER_DEV_HOSTS"), ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		host, ip, ok := strings.Cut(pair, "=")
		addr, err := netip.ParseAddr(ip)
		if !ok || err != nil || host == "" {
			bad("VISOR_COMPUTER_DEV_HOSTS", "%q must be host=address, like shop.test=127.0.0.2", pair)
			continue
		}
		if c.DevHosts == nil {
			c.DevHosts = map[string]netip.Addr{}
		}
		c.DevHosts[strings.ToLower(host)] = addr
	}
	for _, k := range strings.Split(get("VISOR_COMPUTER_DEV_TRUST_SPKI"), ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) != 32 {
			bad("VISOR_COMPUTER_DEV_TRUST_SPKI", "%q must be the base64 SHA-256 of a certificate's public key", k)
			continue
		}
		c.TrustSPKI = append(c.TrustSPKI, k)
	}
	return c
}

// devResolver answers from VISOR_COMPUTER_DEV_HOSTS, and from DNS for other
// hosts.
type devResolver map[string]netip.Addr

func (r devResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// newComputer builds computer use on Postgres. Sessions run on computer
// workers, reached over the worker plane; without Redis (commands that do
// not open it) they are refused as unavailable, and workspaces still work.
func (a *app) newComputer() *computer.Service {
	store := a.stores.computer
	var driver computer.Driver
	if a.rdb != nil {
		driver = computer.PlaneDriver{Plane: redisx.NewPlane(a.rdb, "", a.log.With("area", "plane"))}
	}
	return computer.NewService(store, store, driver, nil, a.log.With("area", "computer"))
}

// computerWorkerID is the computer worker's name on the plane: the worker
// id with a suffix, so a process that is also a sandbox worker has one
// queue for each.
func (a *app) computerWorkerID() string { return a.cfg.Sandbox.WorkerID + browserSuffix }

// startComputerWorker makes this worker a computer worker when configured:
// the session manager on the Docker Engine, its janitor (which first
// removes what this worker id's previous life left, then reaps idle
// sessions and those of workers that stopped answering, reporting their
// sessions lost), and the plane worker that takes session calls.
func (a *app) startComputerWorker(ctx context.Context) error {
	c := a.cfg.Computer
	if !c.Worker {
		return nil
	}
	log := a.log.With("area", "browser")
	cfg := browser.Config{Image: c.Image, WorkerID: a.computerWorkerID(), MaxSessions: c.MaxSessions}
	if len(c.DevHosts) > 0 {
		cfg.Resolver = devResolver(c.DevHosts)
		cfg.DevHosts = slices.Collect(maps.Keys(c.DevHosts))
	}
	if len(c.TrustSPKI) > 0 {
		cfg.ExtraFlags = []string{"--ignore-certificate-errors-spki-list=" + strings.Join(c.TrustSPKI, ",")}
	}
	m, err := browser.New(cfg, log)
	if err != nil {
		return fmt.Errorf("computer worker: %w", err)
	}
	store := a.stores.computer
	p := redisx.NewPlane(a.rdb, "", a.log.With("area", "plane"))
	j := &browser.Janitor{M: m, Period: c.SweepEvery, Alive: p.WorkerAlive, Known: store.HasWorker, Dead: func(ctx context.Context, worker string) {
		sessions, err := store.OpenSessionsOn(ctx, worker)
		if err != nil {
			log.Warn("find a dead worker's sessions", "worker", worker, "err", err)
			return
		}
		for _, s := range sessions {
			if _, err := store.EndSession(ctx, s.TenantID, s.ID, computer.SessionLost, computer.EndWorkerSilent); err != nil {
				log.Warn("report a session lost", "session", s.ID, "err", err)
			}
		}
	}}
	if err := a.start(ctx, j); err != nil {
		return err
	}
	// At its session cap it leaves starts in the pool for a worker with room.
	w := redisx.NewPlaneWorker(a.rdb, redisx.PlaneWorkerOptions{ID: cfg.WorkerID, Pools: []string{computer.Pool}, Capacity: 2 * c.MaxSessions,
		PoolRoom: computer.StartRoom(m.Held, c.MaxSessions)}, log)
	// A workspace worker in this process lends its trees to sessions.
	var trees computer.TreePinner
	if a.wsHost != nil {
		trees = a.wsHost
	}
	for kind, h := range computer.Handlers(m, store, trees) {
		w.Handle(kind, h)
	}
	return a.start(ctx, w)
}
