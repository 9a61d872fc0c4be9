package main

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/web/server"
)

// replicaName names this replica where operators see who is connected:
// the host name and the port it serves on.
func replicaName(httpAddr string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "visor"
	}
	if _, port, err := net.SplitHostPort(httpAddr); err == nil {
		return host + ":" + port
	}
	return host
}

// startLive starts the live-changes plane of a serve process: the hub that
// tracks this replica's notification streams and recomputes them on change
// events, the Redis subscription that feeds it (and kicks its reconciler on
// every (re)subscription), and the grant expirer. app.Close stops them, in
// the reverse order.
// visible is the tools policy's view (tools.VisibleFunc) and forget drops
// its cached rows for each event heard; the MCP endpoint opens its streams
// on the returned hub.
func (a *app) startLive(ctx context.Context, s *server.Server, visible live.VisibleFunc, forget func(tenantID, agentID uuid.UUID)) (*live.Hub, error) {
	log := a.log.With("area", "live")
	hub := live.NewHub(live.Config{Visible: visible, Versions: a.db, ReconcileEvery: a.cfg.LiveReconcile, Log: log,
		Valid: auth.NewValidity(a.db).Refresh, CheckEvery: a.cfg.LiveCredentials})
	if err := a.start(ctx, hub); err != nil {
		return nil, err
	}
	a.streams = live.Local{Hub: hub, Replica: replicaName(a.cfg.HTTPAddr)}
	if a.rdb != nil {
		presence := redisx.NewPresence(a.rdb.Client, replicaName(a.cfg.HTTPAddr), 0, hub.Connections, log)
		if err := a.start(ctx, presence); err != nil {
			return nil, err
		}
		a.streams = presence
		handle := func(e changes.Event) {
			forget(e.TenantID, e.AgentID)
			hub.Handle(e)
		}
		sub := redisx.NewSubscriber(a.rdb.Client, handle, hub.Kick, log)
		if err := a.start(ctx, sub); err != nil {
			return nil, err
		}
	}
	x := grants.NewExpirer(a.grants, time.Second, log)
	if err := a.start(ctx, x); err != nil {
		return nil, err
	}

	stat := func(f func(live.Stats) int) func() float64 {
		return func() float64 { return float64(f(hub.Stats())) }
	}
	s.Registry().MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "visor_live_streams", Help: "Live notification streams held by this replica."},
			stat(func(s live.Stats) int { return s.Streams })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "visor_live_principals", Help: "Distinct principals with a live stream on this replica."},
			stat(func(s live.Stats) int { return s.Principals })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "visor_live_pending", Help: "Tenant recomputes and list_changed notifications this replica has queued or in progress."},
			stat(func(s live.Stats) int { return s.Pending })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "visor_live_notifications_total", Help: "tools/list_changed notifications sent by this replica."},
			stat(func(s live.Stats) int { return int(s.Notified) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "visor_live_reconcile_repairs_total", Help: "Tenants the reconciler found changed without an event (lost or late events)."},
			stat(func(s live.Stats) int { return int(s.Repaired) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "visor_live_revoked_streams_total", Help: "Streams this replica closed because their credential was revoked or expired."},
			stat(func(s live.Stats) int { return int(s.Revoked) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "visor_live_dropped_streams_total", Help: "Streams this replica dropped because they could not take a notification in time."},
			stat(func(s live.Stats) int { return int(s.Dropped) })),
	)
	return hub, nil
}
