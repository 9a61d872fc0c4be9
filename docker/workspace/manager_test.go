package workspace_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/dockertest"
	dws "github.com/visorhq/visor/docker/workspace"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	domain "github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// env is one test's database with a tenant and an employee, and a
// workspace image.
type env struct {
	store  *postgres.WorkspaceStore
	ids    *identity.Service
	image  string
	ref    domain.Ref
	tenant identity.Tenant
	agent  identity.Agent
}

func setup(t *testing.T) *env { return setupB(t) }

func setupB(t testing.TB) *env {
	t.Helper()
	image := dockertest.Workspace(t)
	db := pgtest.New(t)
	ids := identity.NewService(postgres.NewIdentityStore(db), changes.Discard{}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	ten, err := ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	ag, err := ids.CreateAgent(ctx, ten.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	st := postgres.NewWorkspaceStore(db)
	ws, err := st.Ensure(ctx, ten.ID, ag.ID, 64<<20)
	require.NoError(t, err)
	return &env{store: st, ids: ids, image: image, tenant: ten, agent: ag, ref: domain.Ref{Tenant: ten.ID, Agent: ag.ID, ID: ws.ID, Quota: ws.Quota}}
}

// newRef makes another employee with an empty workspace.
func (e *env) newRef(t testing.TB) domain.Ref {
	t.Helper()
	ctx := context.Background()
	ag, err := e.ids.CreateAgent(ctx, e.tenant.ID, identity.NewAgent{Name: "e" + uuid.NewString()[:8]})
	require.NoError(t, err)
	ws, err := e.store.Ensure(ctx, e.tenant.ID, ag.ID, 256<<20)
	require.NoError(t, err)
	return domain.Ref{Tenant: e.tenant.ID, Agent: ag.ID, ID: ws.ID, Quota: ws.Quota}
}

func (e *env) manager(t *testing.T, worker string) *dws.Manager { return e.managerB(t, worker) }

func (e *env) managerB(t testing.TB, worker string, opts ...func(*dws.Config)) *dws.Manager {
	t.Helper()
	cfg := dws.Config{Image: e.image, WorkerID: worker, BaseDir: t.TempDir(), IdleAfter: time.Hour}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := dws.New(cfg,
		dws.Stores{Workspaces: e.store, Artifacts: e.store, Skills: e.store}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() {
		m.CloseAll(context.Background())
		n, err := docker.Sweep(context.Background(), m.Client(), docker.Workspace, worker, 0, nil)
		require.NoError(t, err)
		require.Zero(t, n, "every container was removed")
	})
	return m
}

func exec(t *testing.T, m *dws.Manager, ref domain.Ref, cmd string, wait time.Duration) domain.SessionView {
	t.Helper()
	a, err := m.Do(context.Background(), ref, domain.Op{Exec: &domain.ExecArgs{Cmd: cmd, WaitMS: wait.Milliseconds()}}, true)
	require.NoError(t, err)
	return *a.Session
}

// TestCommandsReportTheirState: a command that succeeds, one that fails
// (a normal answer with command_ok false, exit_code and command_error),
// and a long one that answers with a running session (no command_ok)
// which session_observe follows to its end.
func TestCommandsReportTheirState(t *testing.T) {
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])

	v := exec(t, m, e.ref, "echo hello; id -u", 10*time.Second)
	require.Equal(t, domain.Exited, v.Status)
	require.True(t, *v.CommandOK)
	require.Equal(t, 0, *v.ExitCode)
	require.Equal(t, "hello\n1000\n", v.Output, "commands run as uid 1000")

	v = exec(t, m, e.ref, "echo oops >&2; exit 3", 10*time.Second)
	require.False(t, *v.CommandOK)
	require.Equal(t, 3, *v.ExitCode)
	require.Equal(t, "exit status 3", v.CommandError)
	require.Equal(t, "oops\n", v.Output)

	v = exec(t, m, e.ref, "echo start; sleep 2; echo end", 300*time.Millisecond)
	require.Equal(t, domain.Running, v.Status)
	require.Nil(t, v.CommandOK, "a running command reports no command_ok")
	require.Nil(t, v.ExitCode)
	var out strings.Builder
	cursor := int64(0)
	for v.Status == domain.Running {
		a, err := m.Do(context.Background(), e.ref, domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID, Cursor: cursor, WaitMS: 5000}}, false)
		require.NoError(t, err)
		v = *a.Session
		out.WriteString(v.Output)
		cursor = v.NextCursor
	}
	require.Equal(t, "start\nend\n", out.String())
	require.True(t, *v.CommandOK)

	v = exec(t, m, e.ref, "sleep 30", 200*time.Millisecond)
	a, err := m.Do(context.Background(), e.ref, domain.Op{Act: &domain.ActArgs{Action: "kill", SessionID: v.SessionID}}, false)
	require.NoError(t, err)
	require.Equal(t, []string{v.SessionID}, a.Act.Killed)
	a, err = m.Do(context.Background(), e.ref, domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID}}, false)
	require.NoError(t, err)
	require.Equal(t, domain.Exited, a.Session.Status)
	require.False(t, *a.Session.CommandOK)
	require.Equal(t, "killed by session_act", a.Session.CommandError)

	a, err = m.Do(context.Background(), e.ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "sleep 10", TimeoutMS: 500}}, false)
	require.NoError(t, err)
	require.Equal(t, domain.Exited, a.Session.Status)
	require.Contains(t, a.Session.CommandError, "timed out after 500ms")

	v = exec(t, m, e.ref, "read line; echo got:$line", 200*time.Millisecond)
	_, err = m.Do(context.Background(), e.ref, domain.Op{Act: &domain.ActArgs{Action: "write", SessionID: v.SessionID, Input: "abc\n"}}, false)
	require.NoError(t, err)
	a, err = m.Do(context.Background(), e.ref, domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID, WaitMS: 5000}}, false)
	require.NoError(t, err)
	for a.Session.Status == domain.Running {
		a, err = m.Do(context.Background(), e.ref, domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID, WaitMS: 5000}}, false)
		require.NoError(t, err)
	}
	require.Equal(t, "got:abc\n", a.Session.Output)
}

// TestContainerIsLockedDown: no network without an allow list, a
// read-only root, no capabilities, and the workspace the only writable
// place besides /tmp.
func TestContainerIsLockedDown(t *testing.T) {
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	v := exec(t, m, e.ref, `python3 -c "import socket; socket.create_connection(('1.1.1.1', 443), timeout=3)"`, 20*time.Second)
	require.False(t, *v.CommandOK, "no network: %s", v.Output)
	v = exec(t, m, e.ref, "touch /etc/x", 10*time.Second)
	require.False(t, *v.CommandOK, "read-only root")
	v = exec(t, m, e.ref, "grep CapEff /proc/self/status", 10*time.Second)
	require.Contains(t, v.Output, "0000000000000000")
	v = exec(t, m, e.ref, "echo data > /workspace/f && cat f", 10*time.Second)
	require.Equal(t, "data\n", v.Output)

	list, err := m.Client().ContainerList(context.Background(), container.ListOptions{Filters: docker.Filter(docker.Workspace, m.WorkerID())})
	require.NoError(t, err)
	require.Len(t, list, 1)
	info, err := m.Client().ContainerInspect(context.Background(), list[0].ID)
	require.NoError(t, err)
	require.True(t, info.HostConfig.ReadonlyRootfs)
	require.Equal(t, []string{"ALL"}, []string(info.HostConfig.CapDrop))
	require.Contains(t, info.HostConfig.SecurityOpt, "no-new-privileges")
	require.Equal(t, "none", string(info.HostConfig.NetworkMode))
}

// TestLinksOutOfTheTreeAreRefused: a link a command makes to a file
// outside the workspace cannot be read or written through the file
// tools, though the container sees its own /etc through it.
func TestLinksOutOfTheTreeAreRefused(t *testing.T) {
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	exec(t, m, e.ref, "ln -s /etc/passwd pw && ln -s ../../.. up && ln -s /etc etc", 10*time.Second)
	for _, p := range []string{"pw", "up/etc/passwd", "etc/hostname"} {
		_, err := m.Do(context.Background(), e.ref, domain.Op{Read: &domain.ReadArgs{Path: p}}, false)
		require.True(t, fault.Is(err, fault.Forbidden), "read %s: %v", p, err)
	}
	_, err := m.Do(context.Background(), e.ref, domain.Op{Edit: &domain.EditArgs{Action: "add", Path: "etc/evil", Content: "x"}}, false)
	require.Error(t, err)
	_, err = m.Do(context.Background(), e.ref, domain.Op{Read: &domain.ReadArgs{Path: "../x"}}, false)
	require.True(t, fault.Is(err, fault.Invalid))
}

// TestWorkspaceMovesBetweenWorkers: what one worker's container wrote is
// saved when it lets the workspace go and restored on another worker;
// another tenant's call with the same id is not served; a second worker
// cannot take a live lease.
func TestWorkspaceMovesBetweenWorkers(t *testing.T) {
	e := setup(t)
	m1 := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	m2 := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	exec(t, m1, e.ref, "mkdir -p repo && echo kept > repo/a.txt && ln -s a.txt repo/link", 10*time.Second)

	_, err := m2.Do(context.Background(), e.ref, domain.Op{Status: true}, true)
	require.ErrorAs(t, err, new(*domain.HeldError), "the live lease refuses another worker")
	other := e.ref
	other.Tenant = uuid.New()
	_, err = m1.Do(context.Background(), other, domain.Op{Status: true}, false)
	require.ErrorIs(t, err, domain.ErrNotHeld, "another tenant's call for the same id")

	_, err = m1.Do(context.Background(), e.ref, domain.Op{Stop: true}, false)
	require.NoError(t, err)
	ws, err := e.store.Get(context.Background(), e.tenant.ID, e.agent.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), ws.Revision)
	require.Empty(t, ws.LeaseWorker)

	v := exec(t, m2, e.ref, "cat repo/link && stat -c %U repo/a.txt", 10*time.Second)
	require.Equal(t, "kept\nworker\n", v.Output)
	a, err := m2.Do(context.Background(), e.ref, domain.Op{Read: &domain.ReadArgs{Path: "repo/a.txt"}}, false)
	require.NoError(t, err)
	require.Equal(t, "kept\n", a.Read.Content)
}

// TestIdleWorkspaceIsSavedAndLetGo: the janitor's reaping saves the tree
// and ends the container; the next call opens it again.
func TestIdleWorkspaceIsSavedAndLetGo(t *testing.T) {
	e := setup(t)
	worker := "ws-test-" + uuid.NewString()[:8]
	m, err := dws.New(dws.Config{Image: e.image, WorkerID: worker, BaseDir: t.TempDir(), IdleAfter: time.Millisecond},
		dws.Stores{Workspaces: e.store, Artifacts: e.store, Skills: e.store}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { m.CloseAll(context.Background()) })
	exec(t, m, e.ref, "echo 1 > n", 10*time.Second)
	time.Sleep(5 * time.Millisecond)
	require.Equal(t, 1, m.ReapIdle(context.Background()))
	require.Zero(t, m.Held())
	entries, _ := os.ReadDir(filepath.Dir(t.TempDir()))
	_ = entries
	v := exec(t, m, e.ref, "cat n", 10*time.Second)
	require.Equal(t, "1\n", v.Output)
}

// TestStopSavesWhatARunningCommandWrote: letting a workspace go while a
// command runs kills it and saves what it wrote so far.
func TestStopSavesWhatARunningCommandWrote(t *testing.T) {
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	v := exec(t, m, e.ref, "echo part > p; sleep 30", 500*time.Millisecond)
	require.Equal(t, domain.Running, v.Status)
	_, err := m.Do(context.Background(), e.ref, domain.Op{Stop: true}, false)
	require.NoError(t, err)
	v = exec(t, m, e.ref, "cat p", 10*time.Second)
	require.Equal(t, "part\n", v.Output)
}

// TestCommandsCannotWritePastTheQuota: the tree is on a filesystem of the
// quota's size, so a command writing past the quota fails with ENOSPC as
// a normal result; file_edit refuses to grow the full workspace; the
// snapshot saved stays within the quota and restores; removing the file
// makes the workspace usable again.
func TestCommandsCannotWritePastTheQuota(t *testing.T) {
	e := setup(t) // a 64 MiB quota
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	ctx := context.Background()

	v := exec(t, m, e.ref, "dd if=/dev/zero of=big bs=1M count=100", 30*time.Second)
	require.Equal(t, domain.Exited, v.Status)
	require.False(t, *v.CommandOK, "the command failed: %s", v.Output)
	require.NotZero(t, *v.ExitCode)
	require.Contains(t, v.Output, "No space left on device")
	v = exec(t, m, e.ref, "yes > y.txt", 30*time.Second)
	require.False(t, *v.CommandOK, "yes > file ends at the quota too: %s", v.Output)

	_, err := m.Do(ctx, e.ref, domain.Op{Edit: &domain.EditArgs{Action: "add", Path: "more.txt", Content: "more\n"}}, false)
	require.True(t, fault.Is(err, fault.TooLarge), "file_edit refuses to grow a full workspace: %v", err)
	a, err := m.Do(ctx, e.ref, domain.Op{Status: true}, false)
	require.NoError(t, err)
	require.LessOrEqual(t, a.Usage.Bytes, e.ref.Quota)

	_, err = m.Do(ctx, e.ref, domain.Op{Stop: true}, false)
	require.NoError(t, err)
	ws, err := e.store.Get(ctx, e.tenant.ID, e.agent.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), ws.Revision)
	require.LessOrEqual(t, ws.BytesUsed, e.ref.Quota, "the snapshot holds at most the quota")
	require.Greater(t, ws.BytesUsed, e.ref.Quota/2)

	// Restored (full), the workspace is usable once a file goes.
	v = exec(t, m, e.ref, "rm big && echo fine > small.txt && cat small.txt && df -k /workspace | tail -1", 30*time.Second)
	require.True(t, *v.CommandOK, v.Output)
	require.Contains(t, v.Output, "fine\n")
	_, err = m.Do(ctx, e.ref, domain.Op{Edit: &domain.EditArgs{Action: "add", Path: "more.txt", Content: "more\n"}}, false)
	require.NoError(t, err)
	a, err = m.Do(ctx, e.ref, domain.Op{Read: &domain.ReadArgs{Path: "more.txt"}}, false)
	require.NoError(t, err)
	require.Equal(t, "more\n", a.Read.Content)

	// A quota raised while the workspace is held takes effect at the next
	// call.
	v = exec(t, m, e.ref, "dd if=/dev/zero of=big bs=1M count=80 2>&1; rm -f big", 30*time.Second)
	require.Contains(t, v.Output, "No space left on device")
	raised := e.ref
	raised.Quota = 128 << 20
	a, err = m.Do(ctx, raised, domain.Op{Exec: &domain.ExecArgs{Cmd: "dd if=/dev/zero of=big bs=1M count=80 && rm big", WaitMS: 30000}}, false)
	require.NoError(t, err)
	require.True(t, *a.Session.CommandOK, a.Session.Output)
}

// TestSessionsKillAllTTYAndOutputCap: kill_all ends every running
// command of the workspace; tty gives a command a terminal; a session
// keeps the last MaxOutputKept bytes of its output (an older cursor
// reports the bytes dropped), an answer carries at most max_bytes of it
// and says more follows.
func TestSessionsKillAllTTYAndOutputCap(t *testing.T) {
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	ctx := context.Background()
	do := func(op domain.Op) domain.Answer {
		t.Helper()
		a, err := m.Do(ctx, e.ref, op, false)
		require.NoError(t, err)
		return a
	}

	one, two := exec(t, m, e.ref, "sleep 60", 200*time.Millisecond), exec(t, m, e.ref, "sleep 60", 200*time.Millisecond)
	require.Equal(t, domain.Running, one.Status)
	require.Equal(t, domain.Running, two.Status)
	a := do(domain.Op{Act: &domain.ActArgs{Action: "kill_all"}})
	require.ElementsMatch(t, []string{one.SessionID, two.SessionID}, a.Act.Killed)
	for _, id := range []string{one.SessionID, two.SessionID} {
		v := do(domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: id}}).Session
		require.Equal(t, domain.Exited, v.Status)
		require.False(t, *v.CommandOK)
		require.Equal(t, "killed by session_act", v.CommandError)
	}
	require.Empty(t, do(domain.Op{Act: &domain.ActArgs{Action: "kill_all"}}).Act.Killed, "nothing is left running")

	v := exec(t, m, e.ref, "if [ -t 1 ]; then echo terminal; else echo pipe; fi", 10*time.Second)
	require.Equal(t, "pipe\n", v.Output)
	a = do(domain.Op{Exec: &domain.ExecArgs{Cmd: "if [ -t 1 ]; then echo terminal; else echo pipe; fi", TTY: true, WaitMS: 10000}})
	require.True(t, a.Session.TTY)
	require.Equal(t, "terminal", strings.TrimSpace(a.Session.Output), "tty gives the command a terminal")

	const total = domain.MaxOutputKept + 1<<20
	v = exec(t, m, e.ref, "head -c "+strconv.Itoa(total)+" /dev/zero | tr '\\0' a", 30*time.Second)
	require.Equal(t, domain.Exited, v.Status, "the command ended")
	require.True(t, *v.CommandOK)
	require.EqualValues(t, total, v.OutputBytes)
	require.True(t, v.OutputTruncated, "more output follows the answer's")
	require.LessOrEqual(t, len(v.Output), domain.DefaultReadBytes)
	require.EqualValues(t, 1<<20, v.Dropped, "the oldest output beyond the kept tail is gone")
	require.EqualValues(t, 1<<20, v.Cursor)
	r := do(domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID, Cursor: total - 10, MaxBytes: 100}}).Session
	require.Equal(t, strings.Repeat("a", 10), r.Output)
	require.False(t, r.OutputTruncated)
	r = do(domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID, Cursor: 1 << 20, MaxBytes: domain.MaxOutputRead}}).Session
	require.Len(t, r.Output, domain.MaxOutputRead)
	require.True(t, r.OutputTruncated)
	_, err := m.Do(ctx, e.ref, domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID, MaxBytes: domain.MaxOutputRead + 1}}, false)
	require.True(t, fault.Is(err, fault.Invalid), "max_bytes over its cap: %v", err)
}

// TestOperatorsStopSessions: an operator's view of a held workspace lists
// its running commands (states, never the command lines), and stopping
// its sessions kills every one.
func TestOperatorsStopSessions(t *testing.T) {
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	svc := domain.NewService(domain.Config{Store: e.store, Tasks: e.store, Skills: e.store, Artifacts: e.store, Runner: localRunner{m}})
	ctx := context.Background()
	v := exec(t, m, e.ref, "sleep 60 # private-words", 200*time.Millisecond)
	require.Equal(t, domain.Running, v.Status)

	d, err := svc.Detail(ctx, e.tenant.ID, e.agent.ID)
	require.NoError(t, err)
	require.True(t, d.Live)
	require.Len(t, d.Sessions, 1)
	require.Equal(t, v.SessionID, d.Sessions[0].SessionID)
	require.Equal(t, domain.Running, d.Sessions[0].Status)
	require.Empty(t, d.Sessions[0].Cmd, "operators see states and sizes, not command lines")

	killed, err := svc.StopSessions(ctx, e.tenant.ID, e.agent.ID)
	require.NoError(t, err)
	require.Equal(t, []string{v.SessionID}, killed)
	a, err := m.Do(ctx, e.ref, domain.Op{Observe: &domain.ObserveArgs{Action: "status", SessionID: v.SessionID}}, false)
	require.NoError(t, err)
	require.Equal(t, domain.Exited, a.Session.Status)
	require.Equal(t, "killed by session_act", a.Session.CommandError)
}

// TestSessionLimits: a workspace runs at most MaxSessions commands at
// once (one more is refused until one ends, and an ended session makes
// room), and input to a session is bounded.
func TestSessionLimits(t *testing.T) {
	e := setup(t)
	m := e.manager(t, "ws-test-"+uuid.NewString()[:8])
	ctx := context.Background()
	var first string
	for i := range domain.MaxSessions {
		v := exec(t, m, e.ref, "sleep 120", time.Millisecond)
		require.Equal(t, domain.Running, v.Status, "session %d", i)
		if i == 0 {
			first = v.SessionID
		}
	}
	_, err := m.Do(ctx, e.ref, domain.Op{Exec: &domain.ExecArgs{Cmd: "true", WaitMS: 1}}, false)
	require.True(t, fault.Is(err, fault.RateLimited), "one more than the limit: %v", err)
	_, err = m.Do(ctx, e.ref, domain.Op{Act: &domain.ActArgs{Action: "write", SessionID: first, Input: strings.Repeat("x", domain.MaxInputBytes+1)}}, false)
	require.True(t, fault.Is(err, fault.TooLarge), "input over its cap: %v", err)
	a, err := m.Do(ctx, e.ref, domain.Op{Act: &domain.ActArgs{Action: "kill", SessionID: first}}, false)
	require.NoError(t, err)
	require.Equal(t, []string{first}, a.Act.Killed)
	v := exec(t, m, e.ref, "echo room", 10*time.Second)
	require.Equal(t, "room\n", v.Output, "an ended session makes room")
	_, err = m.Do(ctx, e.ref, domain.Op{Act: &domain.ActArgs{Action: "kill_all"}}, false)
	require.NoError(t, err)
}
