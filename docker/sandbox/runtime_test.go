package sandbox_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker/dockertest"
	"github.com/visorhq/visor/docker/sandbox"
	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/sandbox"
)

// runtimeBundle is setup with an OCI runtime chosen.
func runtimeBundle(t *testing.T, runtime string) *bundle {
	image := dockertest.Sandbox(t)
	b := &bundle{image: image, worker: "test-" + uuid.NewString(), tmp: t.TempDir()}
	r, err := sandbox.New(sandbox.Config{Allowed: []string{image}, WorkerID: b.worker, TempDir: b.tmp, Runtime: runtime},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	b.r = r
	t.Cleanup(func() { b.requireClean(t); _ = r.Close() })
	return b
}

// TestRunscRunsUnderGVisor: with the runtime runsc, a registered gVisor
// runs the container (HostConfig.Runtime, and the kernel the script sees
// is gVisor's), with every other limit kept. When the engine has no runsc,
// the run is refused as runtime_missing and nothing is created: CI on a
// machine without gVisor proves the refusal instead.
func TestRunscRunsUnderGVisor(t *testing.T) {
	t.Parallel()
	b := runtimeBundle(t, "runsc")
	info, err := b.r.Client().Info(context.Background())
	require.NoError(t, err)
	if _, ok := info.Runtimes["runsc"]; !ok {
		_, err := b.r.Run(context.Background(), b.program(domain.Python, "print(1)", 10*time.Second))
		require.Equal(t, fault.Unavailable, fault.CodeOf(err))
		require.Contains(t, fault.Message(err), "Script sandbox unavailable (runtime_missing)")
		return
	}
	id, cancel, done := b.started(t, b.program(domain.Shell, "sleep 60", 60*time.Second))
	st, err := b.r.Client().ContainerInspect(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "runsc", st.HostConfig.Runtime)
	require.Equal(t, "none", string(st.HostConfig.NetworkMode))
	require.True(t, st.HostConfig.ReadonlyRootfs)
	cancel()
	<-done

	// gVisor's own kernel answers dmesg; under runc the script may not read it.
	res := b.run(t, domain.Shell, "dmesg 2>&1 | head -n 3; echo hi > /x && echo WROTE", 30*time.Second)
	require.Contains(t, res.Output, "gVisor", res.Output)
	require.NotContains(t, res.Output, "WROTE")
}

// TestUnknownRuntimeIsRefusedNotReplaced: a runtime the engine does not
// know is a clear refusal, never a run under the default runtime.
func TestUnknownRuntimeIsRefusedNotReplaced(t *testing.T) {
	t.Parallel()
	b := runtimeBundle(t, "no-such-runtime")
	_, err := b.r.Run(context.Background(), b.program(domain.Python, "print(1)", 10*time.Second))
	require.Equal(t, fault.Unavailable, fault.CodeOf(err))
	require.Contains(t, fault.Message(err), `Script sandbox unavailable (runtime_missing): the container runtime "no-such-runtime" is not registered`)
	require.Empty(t, b.containers(t))
}
