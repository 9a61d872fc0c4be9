package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/dockertest"
	"github.com/visorhq/visor/docker/sandbox"
	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/sandbox"
)

// bundle is one test's runner: its own worker id and temporary directory,
// so parallel tests never see each other's containers or directories.
type bundle struct {
	r      *sandbox.Runner
	image  string
	worker string
	tmp    string
}

func setup(t testing.TB, memory int64) *bundle {
	t.Helper()
	image := dockertest.Sandbox(t)
	b := &bundle{image: image, worker: "test-" + uuid.NewString(), tmp: t.TempDir()}
	r, err := sandbox.New(sandbox.Config{Allowed: []string{image}, WorkerID: b.worker, TempDir: b.tmp, Memory: memory},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	b.r = r
	t.Cleanup(func() {
		b.requireClean(t)
		_ = r.Close()
	})
	return b
}

func (b *bundle) program(lang domain.Language, src string, timeout time.Duration) domain.Program {
	return domain.Program{Tenant: uuid.New(), RunID: uuid.New(), Image: b.image, Language: lang, Source: src, Timeout: timeout}
}

func (b *bundle) run(t *testing.T, lang domain.Language, src string, timeout time.Duration) domain.Result {
	t.Helper()
	res, err := b.r.Run(context.Background(), b.program(lang, src, timeout))
	require.NoError(t, err)
	b.requireClean(t)
	return res
}

// containers lists this worker's containers.
func (b *bundle) containers(t testing.TB) []container.Summary {
	t.Helper()
	list, err := b.r.Client().ContainerList(context.Background(), container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelWorker+"="+b.worker)),
	})
	require.NoError(t, err)
	return list
}

// requireClean fails unless no container and no run directory is left.
func (b *bundle) requireClean(t testing.TB) {
	t.Helper()
	require.Empty(t, b.containers(t), "containers left behind")
	entries, err := os.ReadDir(b.tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "run directories left behind")
}

// started runs p in the background and returns, once its container is
// running, the container's id, a cancel for the run and the run's outcome.
func (b *bundle) started(t testing.TB, p domain.Program) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.r.Run(ctx, p)
		done <- err
	}()
	var id string
	defer func() {
		if id == "" { // the wait failed: end the run
			cancel()
		}
	}()
	testsignal.Until(t, 30*time.Second, 20*time.Millisecond, "the sandbox container running", func() bool {
		for _, c := range b.containers(t) {
			if c.State == "running" && c.Labels[docker.LabelID] == p.RunID.String() {
				id = c.ID
				return true
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before its container was seen running: %v", err)
		default:
		}
		return false
	})
	return id, cancel, done
}

func TestCreatedContainerCarriesEveryLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	p := b.program(domain.Shell, "sleep 60", 60*time.Second)
	id, cancel, done := b.started(t, p)
	c, err := b.r.Client().ContainerInspect(context.Background(), id)
	cancel()
	require.NoError(t, err)
	require.ErrorIs(t, <-done, context.Canceled)

	require.Equal(t, "1000:1000", c.Config.User)
	require.Equal(t, []string{"sh", "-c", `exec "$@" 2>&1`, "sandbox", "sh", "/workspace/main.sh"}, []string(c.Config.Cmd))
	require.True(t, c.Config.NetworkDisabled)
	require.Equal(t, map[string]string{
		docker.LabelKind: "sandbox", docker.LabelTenant: p.Tenant.String(),
		docker.LabelID: p.RunID.String(), docker.LabelWorker: b.worker,
	}, c.Config.Labels)

	h := c.HostConfig
	require.Equal(t, []string{"ALL"}, []string(h.CapDrop))
	require.Empty(t, h.CapAdd)
	require.False(t, h.Privileged)
	require.Equal(t, []string{"no-new-privileges"}, h.SecurityOpt)
	require.True(t, h.ReadonlyRootfs)
	require.Equal(t, container.NetworkMode("none"), h.NetworkMode)
	require.EqualValues(t, 2<<30, h.Memory)
	require.EqualValues(t, 2<<30, h.MemorySwap, "no swap beyond the memory limit")
	require.NotNil(t, h.PidsLimit)
	require.EqualValues(t, 256, *h.PidsLimit)
	require.EqualValues(t, 1e9, h.NanoCPUs)
	require.Equal(t, map[string]string{"/tmp": "rw,nosuid,nodev,noexec,size=64m"}, h.Tmpfs)
	require.Empty(t, h.Binds)
	require.Len(t, c.Mounts, 1, "only the script's directory is mounted")
	m := c.Mounts[0]
	require.Equal(t, "bind", string(m.Type))
	require.Equal(t, "/workspace", m.Destination)
	require.False(t, m.RW)
	require.True(t, strings.HasPrefix(m.Source, b.tmp+"/visor-sandbox-"+p.RunID.String()), m.Source)
}

func TestScriptSeesOnlyItsWorkspaceAsTheHostUser(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	res := b.run(t, domain.Shell, `id -u; id -g; ls -A /workspace; grep CapEff /proc/self/status
grep NoNewPrivs /proc/self/status; ls /var/run/docker.sock /run/docker.sock 2>&1 | grep -c 'No such'`, 0)
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Equal(t, "1000\n1000\nmain.sh\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n2\n", res.Output)
}

func TestScriptHasNoNetwork(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	res := b.run(t, domain.Python, `
import os, socket
print(sorted(os.listdir("/sys/class/net")))
for host in ("1.1.1.1", "172.17.0.1", "127.0.0.1"):
    try:
        socket.create_connection((host, 53), timeout=2)
        print(host, "connected")
    except OSError as e:
        print(host, "refused")
`, 0)
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Equal(t, "['lo']\n1.1.1.1 refused\n172.17.0.1 refused\n127.0.0.1 refused\n", res.Output)
}

func TestRootFilesystemAndWorkspaceAreReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	res := b.run(t, domain.Shell, `
for f in /x /etc/x /workspace/x /tmp/x; do
  if (echo x > $f) 2>/dev/null; then echo "$f written"; else echo "$f refused"; fi
done`, 0)
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Equal(t, "/x refused\n/etc/x refused\n/workspace/x refused\n/tmp/x written\n", res.Output)
}

func TestForkBombStopsAtTheProcessLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	res := b.run(t, domain.Python, `
import os, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
    print("forked", n)
except OSError as e:
    print("fork refused after", n)
`, 20*time.Second)
	require.False(t, res.TimedOut)
	var n int
	_, err := fmt.Sscanf(res.Output, "fork refused after %d", &n)
	require.NoError(t, err, res.Output)
	require.Less(t, n, 256)
	require.Greater(t, n, 100)
}

func TestMemoryHogIsReportedOutOfMemory(t *testing.T) {
	t.Parallel()
	b := setup(t, 64<<20) // the same limit, small enough to reach at once
	res := b.run(t, domain.Python, `
chunks = []
while True:
    chunks.append(b"x" * (1 << 20))
`, 30*time.Second)
	require.True(t, res.OOMKilled, "exit %d: %s", res.ExitCode, res.Output)
	require.Equal(t, 137, res.ExitCode)
	require.Contains(t, res.Note(), "ran out of memory")
}

func TestSleeperIsKilledAtItsTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	res := b.run(t, domain.Shell, "echo started; sleep 60; echo never", time.Second)
	require.True(t, res.TimedOut)
	require.Equal(t, "started\n", res.Output)
	require.Less(t, res.Duration, 10*time.Second)
	require.Contains(t, res.Note(), "stopped at its timeout")
	// A run stopped at its timeout never reads as a success: it was killed.
	require.Equal(t, 137, res.ExitCode, "128 + SIGKILL, as a shell reports a killed process")
	require.Contains(t, res.Note(), "SIGKILL")
}

func TestOutputIsCombinedAndCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	res := b.run(t, domain.Shell, "echo out1; echo err1 >&2; echo out2; exit 3", 0)
	require.Equal(t, "out1\nerr1\nout2\n", res.Output)
	require.Equal(t, 3, res.ExitCode)
	require.False(t, res.Cut)
	require.Empty(t, res.Note())

	res = b.run(t, domain.Python, `
import sys
chunk = "y" * 1023 + "\n"
for i in range(3 * 1024):
    (sys.stdout if i % 2 else sys.stderr).write(chunk)
`, 0)
	require.Equal(t, 0, res.ExitCode)
	require.True(t, res.Cut)
	require.Len(t, res.Output, domain.ReplyCap)
	require.Equal(t, strings.Repeat(strings.Repeat("y", 1023)+"\n", 1024), res.Output)
	require.Contains(t, res.Note(), "Output was cut at 1048576 bytes")
}

// A cancelled run force-removes its container itself, before Run returns:
// nothing is left for the janitor. How long that takes is measured by
// BenchmarkCancel.
func TestCancelRemovesTheContainerBeforeRunReturns(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	_, cancel, done := b.started(t, b.program(domain.Python, "import time\ntime.sleep(60)", 60*time.Second))
	at := time.Now()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	took := time.Since(at)
	require.Empty(t, b.containers(t))
	t.Logf("cancel to container removed: %s", took)
}

func TestUnavailableSandboxRunsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for _, tc := range []struct{ image, code string }{
		{"visor-sandbox:not-on-the-list", "image_not_allowed"},
		{b.image + "-missing", "image_missing"},
	} {
		r, err := sandbox.New(sandbox.Config{Allowed: []string{b.image, b.image + "-missing"}, WorkerID: b.worker, TempDir: b.tmp},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		p := b.program(domain.Shell, "echo ran", 0)
		p.Image = tc.image
		_, err = r.Run(context.Background(), p)
		_ = r.Close()
		require.Equal(t, fault.Unavailable, fault.CodeOf(err))
		msg := fault.Message(err)
		require.True(t, strings.HasPrefix(msg, "Script sandbox unavailable ("+tc.code+"): "), msg)
		require.Contains(t, msg, domain.Fix(tc.code, tc.image))
		b.requireClean(t)
	}
	_, err := b.r.Run(context.Background(), b.program("ruby", "puts 1", 0))
	require.Equal(t, fault.Invalid, fault.CodeOf(err))
	_, err = b.r.Run(context.Background(), b.program(domain.Shell, "true", domain.MaxTimeout+time.Second))
	require.Equal(t, fault.Invalid, fault.CodeOf(err))
}

func TestJanitorRemovesLeftovers(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	leftover := func(worker string) string {
		c, err := b.r.Client().ContainerCreate(ctx, &container.Config{
			Image: b.image, Cmd: []string{"sleep", "60"},
			Labels: docker.Labels(docker.Sandbox, worker, "", ""),
		}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		require.NoError(t, err)
		require.NoError(t, b.r.Client().ContainerStart(ctx, c.ID, container.StartOptions{}))
		return c.ID
	}
	mine := leftover(b.worker)
	other := "test-" + uuid.NewString()
	theirs := leftover(other)
	t.Cleanup(func() {
		_ = b.r.Client().ContainerRemove(ctx, theirs, container.RemoveOptions{Force: true})
	})
	old := b.tmp + "/visor-sandbox-" + uuid.NewString() + "-1"
	fresh := b.tmp + "/visor-sandbox-" + uuid.NewString() + "-2"
	require.NoError(t, os.Mkdir(old, 0o700))
	require.NoError(t, os.WriteFile(old+"/main.py", []byte("print(1)"), 0o400))
	require.NoError(t, os.Mkdir(fresh, 0o700))
	long := time.Now().Add(-domain.HardCap - time.Minute)
	require.NoError(t, os.Chtimes(old, long, long))

	removed, dirs, err := b.r.Sweep(ctx, b.worker, 0)
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	require.Equal(t, 1, dirs)
	_, err = b.r.Client().ContainerInspect(ctx, mine)
	require.Error(t, err, "this worker's leftover is gone")
	_, err = b.r.Client().ContainerInspect(ctx, theirs)
	require.NoError(t, err, "another worker's container is kept")
	_, err = os.Stat(old)
	require.True(t, os.IsNotExist(err), "an old run directory is gone")
	require.NoError(t, os.Remove(fresh), "a fresh run directory is kept")
}

func TestUnreachableEngineRunsNothing(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-engine.sock")
	tmp := t.TempDir()
	r, err := sandbox.New(sandbox.Config{Allowed: []string{"visor-sandbox:any"}, WorkerID: "test", TempDir: tmp},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Run(context.Background(), domain.Program{Image: "visor-sandbox:any", Language: domain.Shell, Source: "echo ran"})
	require.Equal(t, fault.Unavailable, fault.CodeOf(err))
	msg := fault.Message(err)
	require.True(t, strings.HasPrefix(msg, "Script sandbox unavailable (docker_unreachable): "), msg)
	require.Contains(t, msg, "Start the Docker Engine")
	require.NotContains(t, msg, "docker pull", "the image is not the cause")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestARunQueuedBehindTheCapSaysHowLongItWaited(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	r, err := sandbox.New(sandbox.Config{Allowed: []string{b.image}, WorkerID: b.worker, TempDir: b.tmp,
		Gate: domain.NewGate(domain.Caps{Worker: 1, Tenant: 1, Employee: 1})},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer r.Close()
	first := make(chan domain.Result, 1)
	go func() {
		res, _ := r.Run(context.Background(), b.program(domain.Shell, "sleep 1; echo first", 0))
		first <- res
	}()
	require.Eventually(t, func() bool { return len(b.containers(t)) == 1 }, 30*time.Second, 10*time.Millisecond)
	second, err := r.Run(context.Background(), b.program(domain.Shell, "echo second", 0))
	require.NoError(t, err)
	res := <-first
	require.Equal(t, "first\n", res.Output)
	require.Zero(t, res.Waited)
	require.Equal(t, "second\n", second.Output)
	require.Greater(t, second.Waited, 100*time.Millisecond)
	require.Contains(t, second.Note(), "waited")
	require.Contains(t, second.Note(), "in a queue before it started")
}

func TestJanitorServiceSweepsItsWorkersLeftoversAtStart(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	ctx := context.Background()
	c, err := b.r.Client().ContainerCreate(ctx, &container.Config{
		Image: b.image, Cmd: []string{"sleep", "60"},
		Labels: docker.Labels(docker.Sandbox, b.worker, "", ""),
	}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	require.NoError(t, err)
	require.NoError(t, b.r.Client().ContainerStart(ctx, c.ID, container.StartOptions{}))

	j := sandbox.NewJanitor(b.r, time.Hour)
	require.NoError(t, j.Start(ctx))
	require.Error(t, j.Start(ctx), "a second start is refused")
	require.Eventually(t, func() bool { return len(b.containers(t)) == 0 }, 10*time.Second, 20*time.Millisecond)
	j.Stop()
	j.Stop()
}
