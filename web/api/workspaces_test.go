package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/api"
)

// TestWorkspacesThroughTheAPI: an operator lists the tenant's workspaces,
// reads one employee's, stops its sessions and resets it (every saved
// revision goes); the two actions are audited, a read-only key is
// refused them (audited too), and another tenant's key finds nothing of
// acme's workspaces.
func TestWorkspacesThroughTheAPI(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	st := postgres.NewWorkspaceStore(s.db)
	trail := &audit.Memory{}
	svc := workspace.NewService(workspace.Config{Store: st, Tasks: st, Skills: st, Artifacts: st})
	f := s.serve(api.Deps{Audit: trail}, api.NewWorkspaces(svc)).withGlobex()
	reader, other := f.key(f.tenant, "reader", identity.ScopeAdminRead), f.otherKey
	ctx := context.Background()
	ada := f.agent(f.tenant, identity.NewAgent{Name: "ada"})
	ws, err := st.Ensure(ctx, f.tenant.ID, ada.ID, 1<<20)
	require.NoError(t, err)
	_, err = st.Lease(ctx, f.tenant.ID, ws.ID, "w1", time.Minute)
	require.NoError(t, err)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "a.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg}))
	_, _ = tw.Write([]byte("hi"))
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	_, err = st.Save(ctx, f.tenant.ID, ws.ID, "w1", &buf, 2, 1)
	require.NoError(t, err)
	require.NoError(t, st.Release(ctx, f.tenant.ID, ws.ID, "w1"))
	base := "/api/v1/tenants/acme"

	var list api.WorkspaceList
	code, body := f.do("GET", base+"/workspaces", reader, "", &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Workspaces, 1)
	require.Equal(t, ws.ID, list.Workspaces[0].ID)
	require.EqualValues(t, 1, list.Workspaces[0].Revision)
	var one workspace.Overview
	code, body = f.do("GET", base+"/agents/ada/workspace", reader, "", &one)
	require.Equal(t, 200, code, body)
	require.Equal(t, ws.ID, one.ID)
	require.False(t, one.Live)

	for _, action := range []string{"stop-sessions", "reset"} {
		code, body = f.do("POST", base+"/agents/ada/workspace/"+action, reader, "", nil)
		require.Equal(t, 403, code, "a read-only key %s: %s", action, body)
	}
	var stopped api.SessionsStopped
	code, body = f.do("POST", base+"/agents/ada/workspace/stop-sessions", f.opKey, "", &stopped)
	require.Equal(t, 200, code, body)
	require.Empty(t, stopped.Killed, "no worker holds it")
	var reset workspace.Workspace
	code, body = f.do("POST", base+"/agents/ada/workspace/reset", f.opKey, "", &reset)
	require.Equal(t, 200, code, body)
	require.Zero(t, reset.Revision, "every saved revision goes")
	require.Zero(t, reset.BytesUsed)

	rows := map[string][]string{}
	for _, r := range trail.Entries() {
		require.Equal(t, f.tenant.ID, r.TenantID)
		rows[r.Action] = append(rows[r.Action], r.Outcome)
	}
	require.ElementsMatch(t, []string{audit.OutcomeRefused, audit.OutcomeOK}, rows["stopWorkspaceSessions"])
	require.ElementsMatch(t, []string{audit.OutcomeRefused, audit.OutcomeOK}, rows["resetWorkspace"])

	code, _ = f.do("GET", "/api/v1/tenants/globex/workspaces", other, "", &list)
	require.Equal(t, 200, code)
	require.Empty(t, list.Workspaces, "globex sees none of acme's workspaces")
	for _, path := range []string{"/api/v1/tenants/globex/agents/" + ada.ID.String() + "/workspace", base + "/agents/ada/workspace"} {
		code, _ = f.do("GET", path, other, "", nil)
		require.Contains(t, []int{401, 403, 404}, code, "globex reads acme's workspace at %s", path)
	}
	code, _ = f.do("POST", "/api/v1/tenants/globex/agents/"+ada.ID.String()+"/workspace/reset", other, "", nil)
	require.Equal(t, 404, code, "globex resets acme's workspace")
}
