package live_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// lastEvent is a changes.Publisher that keeps the last event, for the
// benchmark to hand to the hub itself.
type lastEvent struct{ e changes.Event }

func (l *lastEvent) Publish(_ context.Context, e changes.Event) error { l.e = e; return nil }

// countingStream is a stream that reports each notification to a shared
// counter.
type countingStream struct {
	p identity.Principal
	c *notifyCounter
}

func (s *countingStream) Close()                        {}
func (s *countingStream) Principal() identity.Principal { return s.p }
func (s *countingStream) NotifyToolsChanged(context.Context) error {
	s.c.add()
	return nil
}

// notifyCounter signals done when the count reaches want.
type notifyCounter struct {
	n, want atomic.Int64
	done    chan struct{}
}

func (c *notifyCounter) add() {
	if c.n.Add(1) == c.want.Load() {
		c.done <- struct{}{}
	}
}

// BenchmarkRecomputeAndNotify is the cost curve of one settings change
// against the streams open in the tenant: the time and allocations from
// the change event reaching the hub to the last list_changed handed to the
// changed employee's streams. The employee's visible set is recomputed
// with the real policy (a fresh read of its row on a real Postgres, 40
// tools); the settings commit itself is outside the timer. "one-employee"
// has every stream opened by the changed employee (all are notified);
// "100-employees" spreads them over 100 employees, of whom one changes (a
// hundredth are notified).
//
//	go test ./services/live -run '^$' -bench RecomputeAndNotify -benchtime 200x
func BenchmarkRecomputeAndNotify(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	store := postgres.NewIdentityStore(db)
	pub := &lastEvent{}
	ids := identity.NewService(store, pub, slog.New(slog.DiscardHandler))
	reg := tools.NewRegistry()
	for i := range 40 {
		reg.Register(tools.Tool{Name: fmt.Sprintf("tool_%02d", i), Family: "bench", Scope: identity.ScopeToolsRead,
			Description: "A tool.", Annotations: tools.Annotations{ReadOnly: true},
			Handler: func(context.Context, tools.Call) (*tools.Result, error) { return &tools.Result{}, nil }})
	}
	visible := tools.VisibleFunc(reg, tools.NewSubjects(store, tools.NoGrants{}, time.Second))
	tenant, err := ids.CreateTenant(ctx, "bench", "Bench")
	if err != nil {
		b.Fatal(err)
	}
	agents := make([]identity.Agent, 100)
	for i := range agents {
		if agents[i], err = ids.CreateAgent(ctx, tenant.ID, identity.NewAgent{Name: fmt.Sprintf("a%03d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	deny := false // agents[0] denies tool_07 now: every change flips it
	for _, streams := range []int{1, 100, 10_000} {
		for _, spread := range []int{1, 100} {
			if spread > streams {
				continue
			}
			name := "one-employee"
			if spread > 1 {
				name = "100-employees"
			}
			b.Run(fmt.Sprintf("streams=%d/%s", streams, name), func(b *testing.B) {
				hub := live.NewHub(live.Config{Visible: visible, Versions: db, ReconcileEvery: time.Hour, CheckEvery: time.Hour})
				if err := hub.Start(ctx); err != nil {
					b.Fatal(err)
				}
				defer hub.Stop()
				c := &notifyCounter{done: make(chan struct{}, 1)}
				changed := 0 // streams of agents[0]
				for i := range streams {
					a := agents[i%spread]
					if i%spread == 0 {
						changed++
					}
					p := identity.Principal{TenantID: tenant.ID, TenantSlug: tenant.Slug, Kind: identity.KindEmployee,
						AgentID: a.ID, CredentialID: "k" + a.Name, Scopes: identity.DefaultEmployeeScopes}
					defer hub.Open(ctx, &countingStream{p: p, c: c})()
				}
				if err := hub.Reconcile(ctx); err != nil { // learn the tenant's version
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					deny = !deny
					if _, err := ids.UpdateAgent(ctx, tenant.ID, agents[0].ID, func(a *identity.Agent) error {
						a.Settings.Capabilities.DeniedTools = nil
						if deny {
							a.Settings.Capabilities.DeniedTools = []string{"tool_07"}
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
					c.want.Add(int64(changed))
					b.StartTimer()
					hub.Handle(pub.e)
					select {
					case <-c.done:
					case <-time.After(time.Minute):
						b.Fatalf("%d of %d notifications after a minute (event %+v, hub %+v)", c.n.Load(), c.want.Load(), pub.e, hub.Stats())
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(changed), "notified/op")
				if s := hub.Stats(); s.Streams != streams {
					b.Fatalf("%d streams held, want %d", s.Streams, streams)
				}
			})
		}
	}
}
