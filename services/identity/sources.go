package identity

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// SourceNames says which database source names a tenant has. The database
// sources service implements it.
type SourceNames interface {
	// UnknownSources returns the names among names the tenant has no
	// source for.
	UnknownSources(ctx context.Context, tenantID uuid.UUID, names []string) ([]string, error)
}

// SetSourceNames makes every save of an agent refuse a database source
// name the tenant has no source for ([capabilities] db_sources). Call it
// before the service is used; without it names are not checked.
func (s *Service) SetSourceNames(n SourceNames) { s.sources = n }

// checkSources refuses names added to an agent's db_sources (those not in
// before) that name no source of the tenant. Names already there are left
// alone: a source's removal takes its name out of every agent itself.
func (s *Service) checkSources(ctx context.Context, tenantID uuid.UUID, before, after []string) error {
	if s.sources == nil {
		return nil
	}
	var added []string
	for _, n := range after {
		if !slices.Contains(before, n) && !slices.Contains(added, n) {
			added = append(added, n)
		}
	}
	if len(added) == 0 {
		return nil
	}
	unknown, err := s.sources.UnknownSources(ctx, tenantID, added)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		return fault.New(fault.Invalid, "db_sources: no database source is named %s; an operator adds sources first (visor dbsource add)",
			strings.Join(quoteAll(unknown), ", "))
	}
	return nil
}

func quoteAll(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = `"` + s + `"`
	}
	return out
}
