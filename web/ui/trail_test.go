package ui_test

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
)

// trail reads an in-memory audit trail the way the Postgres store does:
// a tenant's rows matching a filter, newest first, keyset-paged.
type trail struct{ *audit.Memory }

var _ audit.Store = trail{}

func (m trail) List(_ context.Context, tenantID uuid.UUID, f audit.Filter) ([]audit.Entry, error) {
	var out []audit.Entry
	var before *audit.Entry
	all := m.Entries()
	for i := range all {
		if f.Before != uuid.Nil && all[i].ID == f.Before && all[i].TenantID == tenantID {
			before = &all[i]
		}
	}
	for _, e := range all {
		if e.TenantID == tenantID && matches(f, e) && (before == nil || older(e, *before)) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b audit.Entry) int {
		if older(a, b) {
			return 1
		}
		return -1
	})
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	return out[:min(len(out), limit)], nil
}

// older reports whether a sorts after b, newest first.
func older(a, b audit.Entry) bool {
	if !a.At.Equal(b.At) {
		return a.At.Before(b.At)
	}
	return a.ID.String() < b.ID.String()
}

func matches(f audit.Filter, e audit.Entry) bool {
	src := e.Source
	if src == "" {
		src = audit.SourceMCP
	}
	for _, c := range [][2]string{{f.PrincipalKind, e.PrincipalKind}, {f.PrincipalID, e.PrincipalID}, {f.Tool, e.Tool}, {f.Outcome, e.Outcome},
		{f.Event, e.Event}, {f.Source, src}, {f.Action, e.Action}, {f.Object, e.Object}} {
		if c[0] != "" && c[0] != c[1] {
			return false
		}
	}
	return (f.Since.IsZero() || !e.At.Before(f.Since)) && (f.Until.IsZero() || e.At.Before(f.Until))
}

// Facets counts every row matching f, as the Postgres trail does.
func (m trail) Facets(ctx context.Context, tenantID uuid.UUID, f audit.Filter) (audit.Facets, error) {
	f.Before, f.Limit = uuid.Nil, 0
	var out audit.Facets
	counts := map[[2]string]int64{}
	for _, e := range m.Entries() {
		if e.TenantID != tenantID || !matches(f, e) {
			continue
		}
		out.Total++
		for _, k := range [][2]string{{"outcome", e.Outcome}, {"tool", e.Tool}, {"event_type", e.Event}} {
			if k[1] != "" {
				counts[k]++
			}
		}
	}
	for k, n := range counts {
		out.Counts = append(out.Counts, audit.FacetCount{Name: k[0], Value: k[1], Count: n})
	}
	audit.SortFacets(out.Counts)
	return out, nil
}
