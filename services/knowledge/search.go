package knowledge

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// SearchInput is a memory_search call.
type SearchInput struct {
	Text   string
	Agent  string // another employee, by name or id; the caller's own when empty
	Layer  Layer
	Source string
	Since  time.Time
	Until  time.Time
	Limit  int
}

// Search finds memories p may read. An employee reads its own; another
// employee's only when the tenant has shared_memory on and the delegation
// policy relates the two. A caller that is not an employee names one.
func (s *Service) Search(ctx context.Context, p identity.Principal, tenant identity.Tenant, in SearchInput) ([]Hit, error) {
	if len(in.Text) > MaxQuery || !utf8.ValidString(in.Text) {
		return nil, fault.New(fault.Invalid, "query must be valid UTF-8 of at most %d bytes", MaxQuery)
	}
	if in.Layer != "" && !in.Layer.Valid() {
		return nil, fault.New(fault.Invalid, "layer must be one of episodic, semantic, procedural, profile, decision")
	}
	if in.Source != "" && !ValidKey(in.Source) {
		return nil, fault.New(fault.Invalid, "source must be a source key such as round:<uuid>, run:<uuid> or call:<uuid>")
	}
	agent, err := s.readTarget(ctx, p, tenant, in.Agent)
	if err != nil {
		return nil, err
	}
	q := Query{Text: strings.TrimSpace(in.Text), Segments: Segments(in.Text), Agents: []uuid.UUID{agent}, Layer: in.Layer, SourceKey: in.Source,
		Since: in.Since, Until: in.Until, Limit: limit(in.Limit)}
	return s.cfg.Store.Search(ctx, p.TenantID, q)
}

// readTarget is the employee whose memories p reads.
func (s *Service) readTarget(ctx context.Context, p identity.Principal, tenant identity.Tenant, ref string) (uuid.UUID, error) {
	if p.IsEmployee() && (ref == "" || ref == p.AgentID.String()) {
		return p.AgentID, nil
	}
	if !p.IsEmployee() && ref == "" {
		return uuid.Nil, fault.New(fault.Invalid, "agent is required: this caller is not an AI employee, so name the employee")
	}
	a, err := s.agent(ctx, p.TenantID, ref)
	if err != nil || !p.IsEmployee() || a.ID == p.AgentID {
		return a.ID, err
	}
	notReadable := fault.New(fault.NotFound, "no readable memories of AI employee %q: another employee's memory is read only when this tenant shares memory and the delegation policy relates you", clip(ref, 80))
	if !tenant.Settings.SharedMemory {
		return uuid.Nil, notReadable
	}
	ok, err := s.cfg.Relations.Related(ctx, tenant.Settings.Delegation, p.TenantID, p.AgentID, a.ID)
	if err != nil {
		return uuid.Nil, err
	}
	if !ok {
		return uuid.Nil, notReadable
	}
	return a.ID, nil
}

// ByLayer lists p's own memories of a layer (every layer when empty).
func (s *Service) ByLayer(ctx context.Context, p identity.Principal, layer Layer, n int) ([]Memory, error) {
	if layer != "" && !layer.Valid() {
		return nil, fault.New(fault.Invalid, "layer must be one of episodic, semantic, procedural, profile, decision")
	}
	if !p.IsEmployee() {
		return nil, fault.New(fault.Forbidden, "memory_search_by_layer reads the calling AI employee's own memories")
	}
	return s.cfg.Store.ByLayer(ctx, p.TenantID, p.AgentID, layer, limit(n))
}
