package ui_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/ui"
)

// TestWorkspacesPage: members see each employee's workspace, its saved
// files by name and size (never their content) and its artifacts; only
// those who manage agents may stop its commands and reset it (both
// audited); another tenant sees nothing.
func TestWorkspacesPage(t *testing.T) {
	t.Parallel()
	var svc *workspace.Service // set once the env's database exists
	e := newEnv(t, func(d *ui.Deps) { d.Workspaces = svc })
	ctx := context.Background()
	st := postgres.NewWorkspaceStore(e.db)
	svc = workspace.NewService(workspace.Config{Store: st, Tasks: st, Skills: st, Artifacts: st})
	dash := e.replica() // a server with the workspace pages
	ada, err := e.ids.CreateAgent(ctx, e.a.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	ws, err := st.Ensure(ctx, e.a.ID, ada.ID, 1<<20)
	require.NoError(t, err)
	_, err = st.Lease(ctx, e.a.ID, ws.ID, "w1", time.Minute)
	require.NoError(t, err)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	secret := "the secret plan"
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "notes.txt", Mode: 0o644, Size: int64(len(secret)), Typeflag: tar.TypeReg}))
	_, _ = tw.Write([]byte(secret))
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	_, err = st.Save(ctx, e.a.ID, ws.ID, "w1", &buf, int64(len(secret)), 1)
	require.NoError(t, err)
	require.NoError(t, st.Release(ctx, e.a.ID, ws.ID, "w1"))
	require.NoError(t, st.PutArtifact(ctx, workspace.Artifact{TenantID: e.a.ID, AgentID: ada.ID, ID: uuid.New(), Name: "report.pdf",
		MediaType: "application/pdf", SHA256: "ab", Size: 2, CreatedAt: time.Now()}, []byte("hi")))

	const list = "/t/acme/dashboard/workspaces"
	detail := list + "/" + ada.ID.String()
	owner := e.browser()
	owner.onReplica(dash)
	e.signIn(owner, identity.RoleOwner)
	p := owner.get(list)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "ada")
	p = owner.get(detail)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "notes.txt")
	require.Contains(t, p.body, "report.pdf")
	require.NotContains(t, p.body, secret, "contents are never shown")
	require.Contains(t, owner.get(detail, "Accept-Language", "ja").body, "のワークスペース")

	viewer := e.browser()
	viewer.onReplica(dash)
	e.signIn(viewer, identity.RoleViewer)
	require.Equal(t, http.StatusOK, viewer.get(detail).status)
	require.Equal(t, http.StatusForbidden, viewer.submit(detail, detail+"/reset", url.Values{ui.ConfirmField: {"1"}}).status)
	require.Equal(t, http.StatusForbidden, viewer.submit(detail, detail+"/stop", url.Values{ui.ConfirmField: {"1"}}).status)

	globex := e.browser()
	globex.onReplica(dash)
	e.signInAs(globex, "globex", "bob@globex.test")
	require.NotContains(t, globex.get("/t/globex/dashboard/workspaces").body, "ada")
	require.Equal(t, http.StatusNotFound, globex.get("/t/globex/dashboard/workspaces/"+ada.ID.String()).status)

	stopped := follow(t, owner, detail, detail+"/stop", url.Values{ui.ConfirmField: {"1"}})
	require.Equal(t, http.StatusOK, stopped.status, stopped.body)
	require.Contains(t, stopped.body, "Running commands were killed.")
	require.NotEmpty(t, e.rows("stopWorkspaceSessions"), "stopping sessions is audited")

	done := follow(t, owner, detail, detail+"/reset", url.Values{ui.ConfirmField: {"1"}})
	require.Equal(t, http.StatusOK, done.status, done.body)
	require.Contains(t, done.body, "The workspace was emptied.")
	require.NotContains(t, done.body, "notes.txt")
	require.NotEmpty(t, e.rows("resetWorkspace"), "the reset is audited")
}
