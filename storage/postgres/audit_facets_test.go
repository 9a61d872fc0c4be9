package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
)

// TestAuditFacetsCountTheWholeRange: the facet counts of any filter and
// range, partial hours at either end included, equal counting the
// matching rows one by one; a completed pending row moves to its
// outcome; folding past hours changes no count; and another tenant's
// rows are never counted.
func TestAuditFacetsCountTheWholeRange(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	now := time.Now()
	tools := []string{"agent_status", "tasks_list", "create_agent"}
	var batch, pending []audit.Entry
	for i := range 300 {
		e := entry(s.a.ID, tools[i%3], audit.OutcomeOK)
		e.At = now.Add(-time.Duration(i) * 97 * time.Second) // about eight hours, hours cut anywhere
		if i%4 == 0 {
			e.Outcome, e.Event = audit.OutcomeRefused, "permission_denied"
		}
		if i%5 == 0 {
			e.PrincipalKind, e.Source = "operator", audit.SourceAdminAPI
		}
		if i%11 == 0 {
			e.Outcome = audit.OutcomePending
			pending = append(pending, e)
		}
		batch = append(batch, e)
		other := entry(s.b.ID, "agent_status", audit.OutcomeOK)
		other.At = e.At
		batch = append(batch, other)
	}
	for _, err := range l.CommitBatch(batch) {
		require.NoError(t, err)
	}
	// Complete half the pending rows, as a finished tool call does.
	for i, e := range pending {
		if i%2 == 0 {
			e.Outcome, e.Event = audit.OutcomeToolError, "tool_error"
			require.NoError(t, l.Record(ctx, e))
		}
	}
	filters := []audit.Filter{
		{},
		{Outcome: audit.OutcomeRefused},
		{Tool: "tasks_list", Source: audit.SourceMCP},
		{PrincipalKind: "operator"},
		{Since: now.Add(-3*time.Hour - 17*time.Minute)},
		{Until: now.Add(-2*time.Hour + 5*time.Minute)},
		{Since: now.Add(-5*time.Hour - 3*time.Minute), Until: now.Add(-1*time.Hour - 41*time.Minute), Outcome: audit.OutcomeOK},
		{Since: now.Add(-70 * time.Minute), Until: now.Add(-50 * time.Minute)},
		{PrincipalID: "agent:x", Since: now.Add(-4 * time.Hour)},
		{Since: now.Add(time.Hour)},
	}
	check := func(when string) {
		for _, f := range filters {
			got, err := l.Facets(ctx, s.a.ID, f)
			require.NoError(t, err)
			require.Equal(t, countByHand(t, l, s.a.ID, f), got, "%s: %+v", when, f)
		}
	}
	check("before folding")
	// The first count folded the hours before two hours ago; a late
	// completion of a folded hour's row still counts.
	var e audit.Entry
	for i, p := range pending {
		if i%2 == 1 && p.At.Before(now.Add(-3*time.Hour)) {
			e = p
			break
		}
	}
	require.NotZero(t, e.ID, "a pending row of a folded hour")
	e.Outcome = audit.OutcomeFailed
	require.NoError(t, l.Record(ctx, e))
	check("after folding and a late completion")

	b, err := l.Facets(ctx, s.b.ID, audit.Filter{})
	require.NoError(t, err)
	require.EqualValues(t, 300, b.Total, "tenant B counts its own rows only")
	none, err := l.Facets(ctx, uuid.New(), audit.Filter{})
	require.NoError(t, err)
	require.Zero(t, none.Total)
}

// countByHand counts the rows matching f one by one, as Facets orders
// them: by count, then name and value.
func countByHand(t *testing.T, l interface {
	List(context.Context, uuid.UUID, audit.Filter) ([]audit.Entry, error)
}, tenant uuid.UUID, f audit.Filter) audit.Facets {
	t.Helper()
	f.Limit = 1000
	rows, err := l.List(context.Background(), tenant, f)
	require.NoError(t, err)
	require.Less(t, len(rows), 1000)
	counts := map[[2]string]int64{}
	out := audit.Facets{Total: int64(len(rows))}
	for _, r := range rows {
		counts[[2]string{"outcome", r.Outcome}]++
		counts[[2]string{"tool", r.Tool}]++
		counts[[2]string{"event_type", r.Event}]++
	}
	for k, n := range counts {
		out.Counts = append(out.Counts, audit.FacetCount{Name: k[0], Value: k[1], Count: n})
	}
	audit.SortFacets(out.Counts)
	if len(out.Counts) == 0 {
		out.Counts = nil
	}
	return out
}
