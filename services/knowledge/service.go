package knowledge

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// Store persists knowledge. Every method takes the tenant; another
// tenant's row is fault.NotFound. Each write upserts its source first,
// in the write's own transaction, and returns ErrForgotten when the
// source was forgotten, so a write and its source rows commit together or
// not at all.
type Store interface {
	// PutMemory writes m with its key facts and source rows (its own
	// source and every source of its parents). A parent that was
	// forgotten is ErrForgotten; one that never existed is NotFound.
	PutMemory(ctx context.Context, m *Memory) error
	Memory(ctx context.Context, tenantID, id uuid.UUID) (Memory, error)
	Search(ctx context.Context, tenantID uuid.UUID, q Query) ([]Hit, error)
	// ByLayer lists an employee's memories of a layer (all layers when
	// empty), newest first.
	ByLayer(ctx context.Context, tenantID, agentID uuid.UUID, layer Layer, limit int) ([]Memory, error)

	// PutWiki creates or rewrites the page at p.Path, putting src first
	// in its host_sources and keeping the newest keep.
	PutWiki(ctx context.Context, p *WikiPage, src Source, keep int) error
	// Wiki reads a page; agentID uuid.Nil is the shared wiki.
	Wiki(ctx context.Context, tenantID, agentID uuid.UUID, path string) (WikiPage, error)
	// Wikis lists a wiki's pages (without content), by path.
	Wikis(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]WikiPage, error)
	DeleteWiki(ctx context.Context, tenantID, agentID uuid.UUID, path string) error

	PutHandoff(ctx context.Context, h *Handoff) error
	// Handoff reads the newest hand-off of an employee on a task.
	Handoff(ctx context.Context, tenantID, agentID, taskID uuid.UUID) (Handoff, error)

	PutBelief(ctx context.Context, b *Belief) error
	Belief(ctx context.Context, tenantID, id uuid.UUID) (Belief, error)
	// Settle settles a belief. An agent_unverified settlement needs the
	// belief unsettled (fault.Conflict otherwise); a platform_verified
	// one may replace a self-reported one, not another verified one.
	Settle(ctx context.Context, tenantID, id uuid.UUID, outcome bool, how SettleSource, by string) (Belief, error)
	// Beliefs lists an employee's beliefs, newest first, at most limit.
	Beliefs(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]Belief, error)

	// Forget removes what src stored (memories, and memories derived from
	// them; hand-offs; beliefs), marks the source forgotten and lists the
	// wiki pages that name it, in one transaction.
	Forget(ctx context.Context, tenantID uuid.UUID, key, by string) (Forgotten, error)
	// Sources lists an employee's sources (every source of the tenant
	// when agentID is uuid.Nil), newest first.
	Sources(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]Source, error)
}

// Directory is what the service reads about agents (identity.Store).
type Directory interface {
	Agent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error)
	AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (identity.Agent, error)
}

// Relations is the delegation policy (agents.Delegation).
type Relations interface {
	Related(ctx context.Context, policy identity.DelegationPolicy, tenantID, caller, target uuid.UUID) (bool, error)
}

// Config configures a Service.
type Config struct {
	Store     Store
	Directory Directory
	Relations Relations
	// Runs, when set, makes a round of a responsibility run's task write
	// as the run.
	Runs Runs
	// HandoffMaxBytes caps a hand-off (DefaultHandoffMaxBytes when 0).
	HandoffMaxBytes int
}

// Service applies the knowledge rules over a Store.
type Service struct {
	cfg Config
}

// NewService returns the knowledge service.
func NewService(cfg Config) *Service {
	if cfg.HandoffMaxBytes <= 0 {
		cfg.HandoffMaxBytes = DefaultHandoffMaxBytes
	}
	return &Service{cfg: cfg}
}

// SetRuns sets the responsibility runs seam once they exist.
func (s *Service) SetRuns(r Runs) { s.cfg.Runs = r }

// source derives the source of a write by p in call callID.
func (s *Service) source(ctx context.Context, p identity.Principal, callID uuid.UUID) (Source, error) {
	return Derive(ctx, s.cfg.Runs, p, callID)
}
