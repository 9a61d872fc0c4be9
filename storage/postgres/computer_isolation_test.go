package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
)

// TestComputerStoreTenantIsolation calls every store method with tenant
// B's ids on tenant A's workspace and session: each answers not found or
// changes nothing.
func TestComputerStoreTenantIsolation(t *testing.T) {
	t.Parallel()
	f := computerSetup(t)
	ctx := context.Background()
	st := f.must(t, f.as(f.a, f.agentA, true), "computer_session_start",
		map[string]any{"width": 800, "height": 600, "workspace": "new"}).Structured.(computer.Started)
	wsID, err := computer.ParseWorkspaceID(st.WorkspaceID)
	require.NoError(t, err)
	sessID := uuid.MustParse(st.SessionID)
	_, err = f.store.PutFile(ctx, computer.Write{TenantID: f.a.ID, AgentID: f.agentA.ID, WorkspaceID: wsID, SessionID: sessID,
		Path: "a.txt", Content: []byte("mine"), SHA256: computer.Digest([]byte("mine"))})
	require.NoError(t, err)

	b, agentB := f.b.ID, f.agentB.ID
	notFound := func(err error, method string) { require.True(t, fault.Is(err, fault.NotFound), "%s: %v", method, err) }
	_, err = f.store.Workspace(ctx, b, agentB, wsID)
	notFound(err, "Workspace")
	_, err = f.store.Workspace(ctx, f.a.ID, uuid.New(), wsID)
	notFound(err, "Workspace of another employee")
	all, err := f.store.Workspaces(ctx, b, agentB)
	require.NoError(t, err)
	require.Empty(t, all)
	_, _, err = f.store.Files(ctx, b, agentB, wsID, 10)
	notFound(err, "Files")
	_, err = f.store.File(ctx, b, agentB, wsID, "a.txt")
	notFound(err, "File")
	_, err = f.store.AllFiles(ctx, b, agentB, wsID)
	notFound(err, "AllFiles")
	_, err = f.store.PutFile(ctx, computer.Write{TenantID: b, AgentID: agentB, WorkspaceID: wsID, SessionID: sessID, Path: "a.txt", Content: []byte("theirs")})
	notFound(err, "PutFile")
	_, err = f.store.Lease(ctx, b, agentB, wsID, uuid.New())
	notFound(err, "Lease")
	require.NoError(t, f.store.Release(ctx, b, wsID, sessID))
	_, err = f.store.OpenSession(ctx, b, f.agentA.ID)
	notFound(err, "OpenSession")
	_, err = f.store.LastSession(ctx, b, f.agentA.ID)
	notFound(err, "LastSession")
	_, err = f.store.CountAction(ctx, b, sessID)
	require.True(t, fault.Is(err, fault.Conflict), "CountAction counts nothing")
	require.NoError(t, f.store.Touch(ctx, b, sessID))
	ended, err := f.store.EndSession(ctx, b, sessID, computer.SessionStopped, "x")
	require.NoError(t, err)
	require.False(t, ended)
	require.Error(t, f.store.MarkLive(ctx, b, sessID, "w"))
	require.NoError(t, f.store.SaveScreenshot(ctx, f.a.ID, sessID, computer.Screenshot{PNG: []byte("mine"), Width: 800, Height: 600}))
	require.NoError(t, f.store.SaveScreenshot(ctx, b, sessID, computer.Screenshot{PNG: []byte("theirs"), Width: 800, Height: 600}))
	_, err = f.store.LatestScreenshot(ctx, b, sessID)
	notFound(err, "LatestScreenshot")

	// Tenant A's rows are as they were.
	sess, err := f.store.OpenSession(ctx, f.a.ID, f.agentA.ID)
	require.NoError(t, err)
	require.Equal(t, computer.SessionLive, sess.State)
	require.Zero(t, sess.ActionsUsed)
	w, err := f.store.Workspace(ctx, f.a.ID, f.agentA.ID, wsID)
	require.NoError(t, err)
	require.Equal(t, sessID, *w.LeaseSession)
	file, err := f.store.File(ctx, f.a.ID, f.agentA.ID, wsID, "a.txt")
	require.NoError(t, err)
	require.Equal(t, "mine", string(file.Content))
	shot, err := f.store.LatestScreenshot(ctx, f.a.ID, sessID)
	require.NoError(t, err)
	require.Equal(t, "mine", string(shot.PNG))
}
