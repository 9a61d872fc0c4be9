package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
)

// foldAfter is how old an hour's counts must be before they are folded
// into one row per key: later rows rarely land in it.
const foldAfter = 2 * time.Hour

// Facets counts the tenant's rows matching f by outcome, tool and event
// type. Whole hours inside the range are read from audit_facet_hours (a
// few rows an hour, kept by the trail's triggers); only the partial hours
// at either end are read row by row. A filter on a column the hourly
// counts do not hold (the principal, action or object) counts the rows
// themselves; the principal has an index of its own.
func (l *AuditLog) Facets(ctx context.Context, tenantID uuid.UUID, f audit.Filter) (_ audit.Facets, err error) {
	defer fault.Wrap(&err, "count audit facets")
	q := &facetQuery{args: []any{tenantID}}
	for _, d := range []struct{ col, v string }{{"principal_kind", f.PrincipalKind}, {"tool", f.Tool}, {"outcome", f.Outcome},
		{"event_type", f.Event}, {"source", f.Source}} {
		if d.v != "" {
			q.conds += q.arg(" AND "+d.col+" = $%d", d.v)
		}
	}
	var src string
	if f.PrincipalID == "" && f.Action == "" && f.Object == "" {
		if err := l.fold(ctx, tenantID); err != nil {
			return audit.Facets{}, err
		}
		src = q.hybrid(f.Since, f.Until)
	} else {
		for _, d := range []struct{ col, v string }{{"principal_id", f.PrincipalID}, {"action", f.Action}, {"object", f.Object}} {
			if d.v != "" {
				q.conds += q.arg(" AND "+d.col+" = $%d", d.v)
			}
		}
		src = q.rows(f.Since, f.Until)
	}
	rows, err := l.db.Pool.Query(ctx, `SELECT GROUPING(outcome, tool, event_type), coalesce(outcome, ''), coalesce(tool, ''),
		coalesce(event_type, ''), sum(n)::bigint FROM (`+src+`) c
		GROUP BY GROUPING SETS ((outcome), (tool), (event_type), ()) HAVING sum(n) > 0`, q.args...)
	if err != nil {
		return audit.Facets{}, err
	}
	defer rows.Close()
	var out audit.Facets
	for rows.Next() {
		var g int
		var outcome, tool, event string
		var n int64
		if err := rows.Scan(&g, &outcome, &tool, &event, &n); err != nil {
			return audit.Facets{}, err
		}
		// GROUPING's bits, first argument highest: 1 marks a column
		// left out of the group. An operator action has no tool: no
		// facet counts the empty value.
		switch {
		case g != 0b111 && outcome+tool+event == "":
			continue
		}
		switch g {
		case 0b111:
			out.Total = n
		case 0b011:
			out.Counts = append(out.Counts, audit.FacetCount{Name: "outcome", Value: outcome, Count: n})
		case 0b101:
			out.Counts = append(out.Counts, audit.FacetCount{Name: "tool", Value: tool, Count: n})
		case 0b110:
			out.Counts = append(out.Counts, audit.FacetCount{Name: "event_type", Value: event, Count: n})
		}
	}
	audit.SortFacets(out.Counts)
	return out, rows.Err()
}

// facetQuery builds the rows a facet count sums: conds are the filter's
// conditions (" AND col = $n"), args their values after the tenant's.
type facetQuery struct {
	conds string
	args  []any
}

func (q *facetQuery) arg(cond string, v any) string {
	q.args = append(q.args, v)
	return fmt.Sprintf(cond, len(q.args))
}

// rows counts row by row, in [since, until) (a zero bound is open).
func (q *facetQuery) rows(since, until time.Time) string {
	s := `SELECT outcome, tool, event_type, 1::bigint AS n FROM audit_events WHERE tenant_id = $1` + q.conds
	if !since.IsZero() {
		s += q.arg(" AND at >= $%d", since)
	}
	if !until.IsZero() {
		s += q.arg(" AND at < $%d", until)
	}
	return s
}

// hybrid counts the whole hours of [since, until) from the hourly counts
// and the partial hours at its ends row by row.
func (q *facetQuery) hybrid(since, until time.Time) string {
	first, last := since, until // the whole hours: [first, last)
	if !since.IsZero() {
		if first = since.UTC().Truncate(time.Hour); first.Before(since) {
			first = first.Add(time.Hour)
		}
	}
	if !until.IsZero() {
		last = until.UTC().Truncate(time.Hour)
	}
	if !since.IsZero() && !until.IsZero() && !first.Before(last) {
		return q.rows(since, until) // within one or two partial hours
	}
	hours := `SELECT outcome, tool, event_type, n FROM audit_facet_hours WHERE tenant_id = $1` + q.conds
	if !first.IsZero() {
		hours += q.arg(" AND hour >= $%d", first)
	}
	if !last.IsZero() {
		hours += q.arg(" AND hour < $%d", last)
	}
	parts := hours
	if !since.IsZero() && since.Before(first) {
		parts += " UNION ALL " + q.rows(since, first)
	}
	if !until.IsZero() && last.Before(until) {
		parts += " UNION ALL " + q.rows(last, until)
	}
	return parts
}

// fold replaces the tenant's counts of the hours since the last fold, up
// to foldAfter ago, by one row per key, so a long trail's counts stay a
// few rows an hour however many commits wrote them. A fold already
// running for the tenant is left to finish alone.
func (l *AuditLog) fold(ctx context.Context, tenantID uuid.UUID) error {
	until := time.Now().UTC().Add(-foldAfter).Truncate(time.Hour)
	var through *time.Time
	err := l.db.Pool.QueryRow(ctx, `SELECT max(through) FROM audit_facet_folds WHERE tenant_id = $1`, tenantID).Scan(&through)
	if err != nil || (through != nil && !through.Before(until)) {
		return err
	}
	return l.db.InTx(ctx, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('audit_facet_fold ' || $1::text, 0))`, tenantID).Scan(&locked); err != nil || !locked {
			return err
		}
		from := time.Time{}
		if through != nil {
			from = *through
		}
		if _, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM audit_facet_hours WHERE tenant_id = $1 AND hour >= $2 AND hour < $3 RETURNING *)
			INSERT INTO audit_facet_hours (tenant_id, hour, source, principal_kind, outcome, tool, event_type, n)
			SELECT tenant_id, hour, source, principal_kind, outcome, tool, event_type, sum(n) FROM gone
			GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(n) <> 0`, tenantID, from, until); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO audit_facet_folds (tenant_id, through)
			SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM tenants WHERE id = $1)
			ON CONFLICT (tenant_id) DO UPDATE SET through = greatest(audit_facet_folds.through, EXCLUDED.through)`, tenantID, until)
		return err
	})
}
