package workspace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/browser"
	"github.com/visorhq/visor/docker/dockertest"
	dws "github.com/visorhq/visor/docker/workspace"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
	domain "github.com/visorhq/visor/services/workspace"
)

// startJob is computer.KindStart's payload as serve sends it for a
// session placed with the employee's workspace.
type startJob struct {
	Agent   uuid.UUID  `json:"agent"`
	Session uuid.UUID  `json:"session"`
	Width   int        `json:"width"`
	Height  int        `json:"height"`
	Allowed []string   `json:"allowed"`
	Tree    *uuid.UUID `json:"tree,omitempty"`
}

type startAnswer struct {
	Worker string `json:"worker"`
	NoTree string `json:"no_tree"`
}

// startWithTree runs the computer worker's start handler of a process
// that runs both kinds, for ref's employee naming tree.
func startWithTree(t *testing.T, h plane.Handler, worker string, ref domain.Ref, tree uuid.UUID) (uuid.UUID, startAnswer) {
	t.Helper()
	session := uuid.New()
	raw, err := json.Marshal(startJob{Agent: ref.Agent, Session: session, Width: 800, Height: 600, Tree: &tree})
	require.NoError(t, err)
	out, err := h(context.Background(), plane.Job{ID: uuid.New(), Kind: computer.KindStart, Tenant: ref.Tenant, Payload: raw, Worker: worker})
	require.NoError(t, err)
	var a startAnswer
	require.NoError(t, json.Unmarshal(out, &a))
	return session, a
}

// execIn runs argv in a container and returns its stdout and exit code.
func execIn(t *testing.T, cli *client.Client, name string, argv ...string) (string, int) {
	t.Helper()
	ctx := context.Background()
	ex, err := cli.ContainerExecCreate(ctx, name, container.ExecOptions{Cmd: argv, AttachStdout: true, AttachStderr: true})
	require.NoError(t, err)
	conn, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	require.NoError(t, err)
	defer conn.Close()
	var out bytes.Buffer
	_, err = stdcopy.StdCopy(&out, io.Discard, conn.Reader)
	require.NoError(t, err)
	info, err := cli.ContainerExecInspect(ctx, ex.ID)
	require.NoError(t, err)
	return out.String(), info.ExitCode
}

// One process runs both kinds: a browser session started for an employee
// mounts that employee's live workspace tree read-only at
// computer.TreePath. A file written with the file tool before the start
// and one a command writes after it are both in the browser's folder;
// another employee's session sees only its own tree, and a start naming
// another employee's workspace is refused as not mountable. While a
// session mounts the tree the workspace is not let go as idle and
// cannot be stopped; once the session ends it is.
func TestABrowserSessionMountsItsEmployeesLiveWorkspace(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	proc := "join-" + uuid.NewString()[:8]
	wsm := e.managerB(t, proc+"-workspace", func(c *dws.Config) { c.IdleAfter = time.Nanosecond })
	bm, err := browser.New(browser.Config{Image: dockertest.Browser(t), WorkerID: proc + "-browser", TempDir: t.TempDir()},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, bm.Close(context.Background()))
		n, err := docker.Sweep(context.Background(), bm.Client(), docker.Browser, proc+"-browser", 0, nil)
		require.NoError(t, err)
		require.Zero(t, n, "every session container was removed")
	})
	start := computer.Handlers(bm, nil, wsm)[computer.KindStart]

	// Employee A writes a file, then starts a browser session.
	a := e.ref
	_, err = wsm.Do(ctx, a, domain.Op{Edit: &domain.EditArgs{Action: "add", Path: "notes/before.txt", Content: "written before the start\n"}}, true)
	require.NoError(t, err)
	sa, ans := startWithTree(t, start, proc+"-browser", a, a.ID)
	require.Empty(t, ans.NoTree)
	require.Equal(t, proc+"-browser", ans.Worker)
	nameA := "visor-cu-" + sa.String()

	out, code := execIn(t, bm.Client(), nameA, "cat", computer.TreePath+"/notes/before.txt")
	require.Zero(t, code, out)
	require.Equal(t, "written before the start\n", out)

	// A file a command writes after the start is there too: the same folder.
	v := exec(t, wsm, a, "echo written after the start > after.txt", 10*time.Second)
	require.True(t, *v.CommandOK)
	out, code = execIn(t, bm.Client(), nameA, "cat", computer.TreePath+"/after.txt")
	require.Zero(t, code, out)
	require.Equal(t, "written after the start\n", out)

	// The browser's mount is read-only.
	info, err := bm.Client().ContainerInspect(ctx, nameA)
	require.NoError(t, err)
	found := false
	for _, m := range info.Mounts {
		if m.Destination == computer.TreePath {
			found = true
			require.False(t, m.RW, "the browser mounts the tree read-only")
		}
	}
	require.True(t, found, "the session container mounts the tree")

	// Employee B's session sees B's tree only.
	b := e.newRef(t)
	_, err = wsm.Do(ctx, b, domain.Op{Edit: &domain.EditArgs{Action: "add", Path: "mine.txt", Content: "b's\n"}}, true)
	require.NoError(t, err)
	sb, ans := startWithTree(t, start, proc+"-browser", b, b.ID)
	require.Empty(t, ans.NoTree)
	nameB := "visor-cu-" + sb.String()
	out, code = execIn(t, bm.Client(), nameB, "cat", computer.TreePath+"/mine.txt")
	require.Zero(t, code, out)
	require.Equal(t, "b's\n", out)
	_, code = execIn(t, bm.Client(), nameB, "cat", computer.TreePath+"/after.txt")
	require.NotZero(t, code, "another employee's file is not in B's browser")

	// A start for B naming A's workspace, or A's naming a workspace of
	// another tenant, mounts nothing and starts nothing.
	_, ans = startWithTree(t, start, proc+"-browser", b, a.ID)
	require.NotEmpty(t, ans.NoTree)
	require.Empty(t, ans.Worker)
	other := a
	other.Tenant = uuid.New()
	_, ans = startWithTree(t, start, proc+"-browser", other, a.ID)
	require.NotEmpty(t, ans.NoTree)
	require.Equal(t, 2, bm.Len(), "only the two mounted sessions run")
	_, _, err = wsm.Pin(ctx, b.Tenant, b.Agent, a.ID)
	require.ErrorIs(t, err, domain.ErrNotHeld)

	// While mounted, neither workspace is let go as idle, and A's cannot
	// be stopped or reset from under the browser.
	require.Zero(t, wsm.ReapIdle(ctx))
	_, err = wsm.Do(ctx, a, domain.Op{Stop: true}, false)
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	_, err = wsm.Do(ctx, a, domain.Op{Reset: true}, false)
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	require.Equal(t, 2, wsm.Held())

	// A's session ends: A's workspace is let go when idle, B's stays.
	require.NoError(t, bm.Stop(ctx, computer.Ref{Tenant: a.Tenant, Session: sa, Worker: proc + "-browser"}))
	require.Equal(t, 1, wsm.ReapIdle(ctx))
	require.Equal(t, 1, wsm.Held())
	_, _, err = wsm.Pin(ctx, a.Tenant, a.Agent, a.ID)
	require.ErrorIs(t, err, domain.ErrNotHeld)
}
