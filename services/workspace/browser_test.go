package workspace_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/workspace"
)

// statusRunner answers a status from a named worker and records the refs
// it was sent.
type statusRunner struct {
	worker string
	refs   []workspace.Ref
}

func (r *statusRunner) Run(_ context.Context, _ workspace.Workspace, ref workspace.Ref, op workspace.Op) (workspace.Answer, error) {
	r.refs = append(r.refs, ref)
	if !op.Status {
		return workspace.Answer{}, fault.New(fault.Invalid, "only status here")
	}
	return workspace.Answer{Status: &workspace.HostStatus{Worker: r.worker}}, nil
}

func (r *statusRunner) Held(context.Context, workspace.Workspace, workspace.Ref, workspace.Op) (workspace.Answer, error) {
	return workspace.Answer{}, workspace.ErrNotHeld
}

// Open, for a browser session, opens each employee's own workspace (of its
// own tenant) and names the worker that holds it; without workspace
// workers it is refused as unavailable.
func TestOpenForABrowserSessionNamesTheEmployeesOwnWorkspace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	r := &statusRunner{worker: "p1-workspace"}
	svc := workspace.NewService(workspace.Config{Store: f.store, Runner: r})
	ids := map[string]bool{}
	for _, p := range []*tools.Subject{f.ada, f.bob, f.gil} {
		sub := struct{ tenant, agent uuid.UUID }{p.Principal.TenantID, p.Principal.AgentID}
		id, worker, err := svc.Open(ctx, sub.tenant, sub.agent, []string{"git.test"})
		require.NoError(t, err)
		require.Equal(t, "p1-workspace", worker)
		ws, err := f.store.Get(ctx, sub.tenant, sub.agent)
		require.NoError(t, err)
		require.Equal(t, ws.ID, id, "the employee's own workspace")
		last := r.refs[len(r.refs)-1]
		require.Equal(t, sub.tenant, last.Tenant)
		require.Equal(t, sub.agent, last.Agent)
		require.Equal(t, id, last.ID)
		require.Equal(t, []string{"git.test"}, last.AllowedHosts)
		ids[id.String()] = true
	}
	require.Len(t, ids, 3, "one workspace each")

	_, _, err := workspace.NewService(workspace.Config{Store: f.store}).Open(ctx, f.ada.Principal.TenantID, f.ada.Principal.AgentID, nil)
	require.True(t, fault.Is(err, fault.Unavailable), "%v", err)
}
