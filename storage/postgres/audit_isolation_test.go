package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
)

// TestAuditRejectedRowFailsOnlyItself: a batch holding rows Postgres
// refuses (a deleted tenant's, a value a constraint refuses) is retried
// without them: every other row of the batch, of any tenant, commits, and a
// NUL or invalid UTF-8 that got past the edges is stored, made storable.
func TestAuditRejectedRowFailsOnlyItself(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	gone := uuid.New() // no such tenant: the foreign key refuses its rows
	var batch []audit.Entry
	var bad []int
	for i := range 24 {
		e := entry(s.b.ID, "agent_status", audit.OutcomeOK)
		switch i % 6 {
		case 1:
			e.TenantID = gone
			bad = append(bad, i)
		case 2:
			e.TenantID, e.Tool = s.a.ID, "create\x00agent\xff"
		case 3:
			e.TenantID, e.PrincipalKind = s.a.ID, "robot" // the check constraint refuses it
			bad = append(bad, i)
		case 4:
			e.TenantID = s.a.ID
		}
		batch = append(batch, e)
	}
	errs := l.CommitBatch(batch)
	for i, err := range errs {
		if slices.Contains(bad, i) {
			require.Error(t, err, "row %d", i)
		} else {
			require.NoError(t, err, "row %d", i)
		}
	}
	got, err := l.List(ctx, s.b.ID, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got, 8, "tenant B's rows all committed")
	got, err = l.List(ctx, s.a.ID, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got, 8, "tenant A's acceptable rows committed beside its refused ones")
	stored, err := l.List(ctx, s.a.ID, audit.Filter{Tool: "create\uFFFDagent\uFFFD"})
	require.NoError(t, err)
	require.Len(t, stored, 4, "the NUL and the invalid byte are stored as U+FFFD")
}

// TestAuditFloodOfRefusedRowsFailsNoOtherTenant: tenant A floods the
// writers with rows Postgres refuses and with rows whose names hold a NUL
// (what a flood of malformed tools/call made before the edges checked),
// while every row of tenant B commits. The figures are B's waits.
func TestAuditFloodOfRefusedRowsFailsNoOtherTenant(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	const floodRows, floodWorkers, bRows, bWorkers = 3000, 24, 400, 8
	stop := make(chan struct{})
	var flood sync.WaitGroup
	var floodOK, floodFailed sync.Map
	for w := range floodWorkers {
		flood.Add(1)
		go func() {
			defer flood.Done()
			for i := 0; i < floodRows/floodWorkers; i++ {
				e := entry(s.a.ID, "x\x00", audit.OutcomeFailed)
				if (w+i)%2 == 0 {
					e.PrincipalKind = "robot"
				}
				if err := l.Record(ctx, e); err != nil {
					floodFailed.Store(e.ID, true)
				} else {
					floodOK.Store(e.ID, true)
				}
			}
		}()
	}
	var bWG sync.WaitGroup
	waits := make(chan time.Duration, bRows)
	errs := make(chan error, bRows)
	for range bWorkers {
		bWG.Add(1)
		go func() {
			defer bWG.Done()
			for range bRows / bWorkers {
				start := time.Now()
				errs <- l.Record(ctx, entry(s.b.ID, "create_agent", audit.OutcomeOK))
				waits <- time.Since(start)
			}
		}()
	}
	bWG.Wait()
	close(stop)
	flood.Wait()
	close(errs)
	close(waits)
	for err := range errs {
		require.NoError(t, err, "tenant B's call failed during tenant A's flood")
	}
	got, err := l.List(ctx, s.b.ID, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got, bRows, "every call of tenant B is audited")
	nOK, nFailed := count(&floodOK), count(&floodFailed)
	require.Equal(t, floodRows, nOK+nFailed)
	require.Positive(t, nFailed, "the refused rows failed")
	stored, err := l.List(ctx, s.a.ID, audit.Filter{Limit: 1000, Tool: "x\uFFFD"})
	require.NoError(t, err)
	require.NotEmpty(t, stored, "the NUL-named rows were stored")
	var all []time.Duration
	for w := range waits {
		all = append(all, w)
	}
	slices.Sort(all)
	t.Logf("tenant B during the flood: %d rows, wait p50 %v, p99 %v, max %v; tenant A: %d stored, %d refused",
		len(all), all[len(all)/2], all[len(all)*99/100], all[len(all)-1], nOK, nFailed)
}

func count(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// TestAuditPendingRowIsCompletedOnce: a pending row is completed by the
// next Record of its id, once; its identifying columns cannot change, and a
// completed row stays as it is.
func TestAuditPendingRowIsCompletedOnce(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	e := entry(s.a.ID, "create_agent", audit.OutcomePending)
	require.NoError(t, l.Record(ctx, e))
	_, err := s.db.Pool.Exec(ctx, `UPDATE audit_events SET tool = 'other', outcome = 'ok' WHERE id = $1`, e.ID)
	require.ErrorContains(t, err, "append-only", "a completion changes only the outcome")

	done := e
	done.Outcome, done.Code, done.Event, done.Message, done.Latency = audit.OutcomeToolError, 0, "tool_call", "name taken", 3*time.Millisecond
	require.NoError(t, l.Record(ctx, done))
	again := done
	again.Outcome, again.Message = audit.OutcomeOK, "rewritten"
	require.NoError(t, l.Record(ctx, again), "a repeat is ignored, not an error")
	_, err = s.db.Pool.Exec(ctx, `UPDATE audit_events SET outcome = 'ok' WHERE id = $1`, e.ID)
	require.ErrorContains(t, err, "append-only")

	got, err := l.List(ctx, s.a.ID, audit.Filter{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, audit.OutcomeToolError, got[0].Outcome)
	require.Equal(t, "name taken", got[0].Message)
	require.Equal(t, 3*time.Millisecond, got[0].Latency)
	require.Equal(t, e.ArgsDigest, got[0].ArgsDigest)
}
