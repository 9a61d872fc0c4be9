package postgres

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/rounds"
)

// WakeupListener rings a rounds.Bell for every wake-up that turns ready in
// any process (the visor_wakeups notification), so a long-poll held by
// this replica answers at once. It holds one connection while it runs.
type WakeupListener struct {
	db   *DB
	bell *rounds.Bell
	log  *slog.Logger
	life lifecycle.Base
}

// NewWakeupListener returns a listener ringing bell.
func NewWakeupListener(db *DB, bell *rounds.Bell, log *slog.Logger) *WakeupListener {
	return &WakeupListener{db: db, bell: bell, log: log}
}

// Start listens until Stop.
func (l *WakeupListener) Start(ctx context.Context) error { return l.life.Start(ctx, l.loop) }

// Stop stops listening and releases the connection.
func (l *WakeupListener) Stop() { l.life.Stop() }

func (l *WakeupListener) loop(ctx context.Context) {
	for ctx.Err() == nil {
		err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		// Long-polls re-check on their own meanwhile; nothing is lost.
		l.log.WarnContext(ctx, "wake-up notifications interrupted; reconnecting", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (l *WakeupListener) listen(ctx context.Context) error {
	pc, err := l.db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // a listening connection never returns to the pool
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN visor_wakeups`); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		tenant, agent, ok := strings.Cut(n.Payload, ":")
		t, err1 := uuid.Parse(tenant)
		a, err2 := uuid.Parse(agent)
		if ok && err1 == nil && err2 == nil {
			l.bell.Ring(t, a)
		}
	}
}
