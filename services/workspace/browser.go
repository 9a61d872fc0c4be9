package workspace

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Open opens the employee's workspace (or finds the worker that holds
// it) for a browser session that mounts its tree, and names that worker.
// The caller has checked that the employee has the workspace tools.
func (s *Service) Open(ctx context.Context, tenant, agent uuid.UUID, allowedHosts []string) (id uuid.UUID, worker string, err error) {
	if s.cfg.Runner == nil {
		return uuid.Nil, "", fault.New(fault.Unavailable, "workspace workers are not configured in this deployment")
	}
	ws, err := s.cfg.Store.Ensure(ctx, tenant, agent, s.cfg.Quota)
	if err != nil {
		return uuid.Nil, "", err
	}
	ref := Ref{Tenant: tenant, Agent: agent, ID: ws.ID, Quota: ws.Quota, AllowedHosts: allowedHosts}
	a, err := s.cfg.Runner.Run(ctx, ws, ref, Op{Status: true})
	if err != nil {
		return uuid.Nil, "", err
	}
	if a.Status == nil || a.Status.Worker == "" {
		return uuid.Nil, "", fmt.Errorf("workspace: the worker did not name itself")
	}
	if terr := s.cfg.Store.Touch(ctx, tenant, ws.ID); terr != nil {
		s.cfg.Log.Warn("record a workspace's use", "workspace", ws.ID, "err", terr)
	}
	return ws.ID, a.Status.Worker, nil
}
