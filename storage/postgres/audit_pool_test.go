package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
)

// TestAuditCommitsWhileRequestsHoldEveryConnection: the writers have
// connections of their own, so a row commits while request handlers hold
// every connection of the pool the store was opened with.
func TestAuditCommitsWhileRequestsHoldEveryConnection(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	var held []*pgxpool.Conn
	release := func() {
		for _, c := range held {
			c.Release()
		}
		held = nil
	}
	defer release()
	for range s.db.Pool.Config().MaxConns {
		c, err := s.db.Pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, c)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i := range 3 {
		require.NoError(t, l.Record(rctx, entry(s.a.ID, "busy", audit.OutcomeOK)), "row %d committed while the pool is in use", i)
	}
	release()
	got, err := l.List(ctx, s.a.ID, audit.Filter{Tool: "busy"})
	require.NoError(t, err)
	require.Len(t, got, 3)

	// They show as the audit writers' in pg_stat_activity, and Stop closes
	// them.
	writers := func() (n int) {
		require.NoError(t, s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'visor-audit'`).Scan(&n))
		return n
	}
	require.Positive(t, writers())
	l.Stop()
	// A closed connection's server process leaves pg_stat_activity as it
	// exits, a moment after the client hung up.
	require.Eventually(t, func() bool { return writers() == 0 }, 10*time.Second, 20*time.Millisecond, "connections left after Stop")
}
