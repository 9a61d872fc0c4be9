package redisx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/lifecycle"
)

// ChangesPattern matches every tenant's change channel.
const ChangesPattern = "visor:tenant:*:changes"

// ChangesChannel is the Redis channel that carries one tenant's change
// events. Channels are per tenant so a subscriber can never mistake one
// tenant's event for another's.
func ChangesChannel(tenantID uuid.UUID) string {
	return "visor:tenant:" + tenantID.String() + ":changes"
}

// Bus publishes committed changes on Redis. It implements changes.Publisher.
type Bus struct {
	rdb     *redis.Client
	timeout time.Duration
}

var _ changes.Publisher = (*Bus)(nil)

// NewBus returns a publisher on rdb. A publish waits at most one second: a
// change is already committed, and a missed event is repaired by the
// replicas' reconciliation, so a slow Redis must not hold up the request.
func NewBus(rdb *redis.Client) *Bus { return &Bus{rdb: rdb, timeout: time.Second} }

// Publish sends e on its tenant's channel. An error means "maybe not
// delivered".
func (b *Bus) Publish(ctx context.Context, e changes.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if err := b.rdb.Publish(ctx, ChangesChannel(e.TenantID), data).Err(); err != nil {
		return fmt.Errorf("publish change for tenant %s: %w", e.TenantID, err)
	}
	return nil
}

// Subscriber feeds every tenant's change events to a handler, re-subscribing
// after Redis drops or stalls. Each (re)subscription calls OnSubscribed, so
// the caller can reconcile what it may have missed while disconnected.
type Subscriber struct {
	rdb          *redis.Client
	handle       func(changes.Event)
	onSubscribed func()
	log          *slog.Logger
	// idle is how long the connection may stay silent before a ping, and
	// three times that before it is declared dead and replaced.
	idle time.Duration
	life lifecycle.Base
}

// NewSubscriber returns a subscriber that calls handle for each event and
// onSubscribed after each (re)subscription. Both run on the subscriber's
// goroutine and must not block for long.
func NewSubscriber(rdb *redis.Client, handle func(changes.Event), onSubscribed func(), log *slog.Logger) *Subscriber {
	return &Subscriber{rdb: rdb, handle: handle, onSubscribed: onSubscribed, log: log, idle: time.Second}
}

// Start subscribes in the background until Stop. It runs once
// (lifecycle.Base).
func (s *Subscriber) Start(ctx context.Context) error { return s.life.Start(ctx, s.run) }

// Stop ends the subscription and waits for the goroutine; it is safe to
// call twice.
func (s *Subscriber) Stop() { s.life.Stop() }

// run holds one subscription at a time, replacing it when it fails.
func (s *Subscriber) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		healthy := s.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if healthy {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// listen subscribes and dispatches until the connection fails or goes
// silent. It reports whether the subscription was ever confirmed.
func (s *Subscriber) listen(ctx context.Context) (confirmed bool) {
	ps := s.rdb.PSubscribe(ctx, ChangesPattern)
	defer ps.Close()
	heard := time.Now()
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, s.idle)
		if err != nil {
			if ctx.Err() != nil {
				return confirmed
			}
			var ne interface{ Timeout() bool }
			if !errors.As(err, &ne) || !ne.Timeout() {
				s.log.WarnContext(ctx, "redis change subscription lost", "err", err)
				return confirmed
			}
			if time.Since(heard) > 3*s.idle {
				s.log.WarnContext(ctx, "redis change subscription silent; reconnecting")
				return confirmed
			}
			if err := ps.Ping(ctx); err != nil {
				s.log.WarnContext(ctx, "redis change subscription ping", "err", err)
				return confirmed
			}
			continue
		}
		heard = time.Now()
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "psubscribe" {
				confirmed = true
				s.log.InfoContext(ctx, "subscribed to change events", "pattern", m.Channel)
				s.onSubscribed()
			}
		case *redis.Message:
			s.dispatch(ctx, m)
		}
	}
	return confirmed
}

// dispatch decodes one event, refusing one whose tenant differs from its
// channel's.
func (s *Subscriber) dispatch(ctx context.Context, m *redis.Message) {
	var e changes.Event
	if err := json.Unmarshal([]byte(m.Payload), &e); err != nil {
		s.log.WarnContext(ctx, "undecodable change event", "channel", m.Channel, "err", err)
		return
	}
	if m.Channel != ChangesChannel(e.TenantID) {
		s.log.WarnContext(ctx, "change event on the wrong tenant's channel", "channel", m.Channel, "tenant", e.TenantID)
		return
	}
	s.handle(e)
}
