package knowledge

import (
	"context"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Forget forgets a source for an operator: what was stored from it is
// removed, later writes from it (and writes naming a memory removed with
// it as a parent) are refused, and the wiki pages whose host_sources name
// it are returned for a person to review; they are never deleted. It is
// refused for any caller that is not an operator: an AI employee cannot
// take back what it was told, nor can a third-party client.
func (s *Service) Forget(ctx context.Context, p identity.Principal, key string) (Forgotten, error) {
	if p.Kind != identity.KindOperator {
		return Forgotten{}, fault.New(fault.Forbidden, "forgetting a source is an operator's action; this credential is not an operator's")
	}
	if !ValidKey(key) {
		return Forgotten{}, fault.New(fault.Invalid, "source must be a source key such as round:<uuid>, run:<uuid> or call:<uuid>")
	}
	return s.cfg.Store.Forget(ctx, p.TenantID, key, p.ID())
}

// Sources lists the sources an employee's knowledge came from (every
// source of the tenant when agent is uuid.Nil), newest first.
func (s *Service) Sources(ctx context.Context, p identity.Principal, agent identity.Agent, n int) ([]Source, error) {
	return s.cfg.Store.Sources(ctx, p.TenantID, agent.ID, max(1, min(n, 500)))
}
