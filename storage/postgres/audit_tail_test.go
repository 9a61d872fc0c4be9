package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
)

// TestAuditTailFollowsNewRows: a tail hands on each new row of its tenant
// that matches its filter exactly once, oldest first — including a row
// committed after a newer one — and never a row from before it started, a
// filtered-out row or another tenant's row; a burst larger than a batch is
// reported as skipped.
func TestAuditTailFollowsNewRows(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	at := func(e audit.Entry, d time.Duration) audit.Entry { e.At = start.Add(d); return e }
	record := func(es ...audit.Entry) {
		for _, e := range es {
			require.NoError(t, l.Record(context.Background(), e))
		}
	}
	old := at(entry(s.a.ID, "agent_status", audit.OutcomeOK), -time.Minute)
	r1 := at(entry(s.a.ID, "agent_status", audit.OutcomeOK), time.Second)
	r2 := at(entry(s.a.ID, "agent_status", audit.OutcomeRefused), 2*time.Second)
	late := at(entry(s.a.ID, "agent_status", audit.OutcomeOK), 500*time.Millisecond)
	other := at(entry(s.a.ID, "create_agent", audit.OutcomeOK), 2*time.Second)
	globex := at(entry(s.b.ID, "agent_status", audit.OutcomeOK), 2*time.Second)
	record(old, r1)

	var got [][]uuid.UUID
	tail := audit.Tail{Store: l, Every: 10 * time.Millisecond}
	err := tail.Follow(ctx, s.a.ID, audit.Filter{Tool: "agent_status"}, start, func(b audit.TailBatch) error {
		require.False(t, b.Skipped)
		var ids []uuid.UUID
		for _, e := range b.Entries {
			ids = append(ids, e.ID)
		}
		got = append(got, ids)
		switch len(got) {
		case 1:
			record(r2, late, other, globex) // the next read sees them
		case 3:
			cancel()
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, [][]uuid.UUID{{r1.ID}, {late.ID, r2.ID}, nil}, got)

	// A burst of five rows read two at a time: the newest two, and a
	// note that older ones were skipped.
	for i := range 5 {
		record(at(entry(s.b.ID, "agent_status", audit.OutcomeOK), time.Duration(i+10)*time.Second))
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	var first audit.TailBatch
	err = audit.Tail{Store: l, Every: 10 * time.Millisecond, Batch: 2}.Follow(ctx2, s.b.ID, audit.Filter{}, start.Add(5*time.Second),
		func(b audit.TailBatch) error { first = b; cancel2(); return nil })
	require.NoError(t, err)
	require.Len(t, first.Entries, 2)
	require.True(t, first.Skipped)
	require.True(t, first.Entries[0].At.Before(first.Entries[1].At), "oldest first")
}
