package sandbox_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
	"github.com/visorhq/visor/services/sandbox"
)

func job(t *testing.T, j sandbox.Job, enqueued time.Time) plane.Job {
	raw, err := json.Marshal(j)
	require.NoError(t, err)
	return plane.Job{ID: uuid.New(), Kind: sandbox.JobKind, Tenant: uuid.New(), Payload: raw, Enqueued: enqueued, Worker: "w1",
		Report: func(plane.Progress) {}}
}

// refuser stands for the Docker runner with an empty allow-list: it
// refuses every image as that runner does (image_not_allowed), before it
// would reach the engine.
type refuser struct{}

func (refuser) Run(_ context.Context, p sandbox.Program) (sandbox.Result, error) {
	return sandbox.Result{}, sandbox.Unavailable("image_not_allowed", p.Image, "the image is not on the platform's allow-list", nil)
}

func refusing(*testing.T) sandbox.Runner { return refuser{} }

func answer(t *testing.T, h plane.Handler, j plane.Job) sandbox.Answer {
	t.Helper()
	raw, err := h(context.Background(), j)
	require.NoError(t, err)
	var a sandbox.Answer
	require.NoError(t, json.Unmarshal(raw, &a))
	return a
}

// TestHostRunsNeedTheJobsAskAndTheWorkersSwitch: a script the sandbox
// cannot run runs on the host only when the job asked for it (the tenant's
// setting and serve's switch) and the worker was given a host runner (its
// own switch); otherwise the refusal stands and nothing runs.
func TestHostRunsNeedTheJobsAskAndTheWorkersSwitch(t *testing.T) {
	t.Parallel()
	script := sandbox.Job{RunID: uuid.New(), Image: "img", Language: sandbox.Shell, Source: "echo ran"}
	for _, tc := range []struct {
		name   string
		onHost bool
		host   sandbox.Runner
	}{{"not asked", false, sandbox.HostRunner{}}, {"not allowed on the worker", true, nil}} {
		j := script
		j.OnHost = tc.onHost
		_, err := sandbox.Handler(refusing(t), tc.host)(context.Background(), job(t, j, time.Now()))
		require.Equal(t, fault.Unavailable, fault.CodeOf(err), tc.name)
		require.Contains(t, fault.Message(err), "Script sandbox unavailable (image_not_allowed)", tc.name)
	}
	j := script
	j.OnHost = true
	a := answer(t, sandbox.Handler(refusing(t), sandbox.HostRunner{TempDir: t.TempDir()}), job(t, j, time.Now()))
	require.True(t, a.OnHost)
	require.Contains(t, a.Unavailable, "image_not_allowed")
	require.Equal(t, "ran\n", a.Output)
}

// TestAnswerSaysHowLongTheRunWaited: time queued on the plane counts as
// waiting and the note says so; the ordinary hand-over does not.
func TestAnswerSaysHowLongTheRunWaited(t *testing.T) {
	t.Parallel()
	h := sandbox.Handler(sandbox.HostRunner{TempDir: t.TempDir()}, nil)
	j := sandbox.Job{RunID: uuid.New(), Language: sandbox.Python, Source: "print(1)"}
	a := answer(t, h, job(t, j, time.Now().Add(-700*time.Millisecond)))
	require.GreaterOrEqual(t, a.WaitedMS, int64(700))
	require.Contains(t, a.Result().Note(), "waited")
	a = answer(t, h, job(t, j, time.Now()))
	require.Zero(t, a.WaitedMS)
	require.Empty(t, a.Result().Note())
}

// TestHostRunnerKeepsTheTimeoutAndCaps: a host run is killed at its
// timeout, with everything it started, and its output is capped.
func TestHostRunnerKeepsTheTimeoutAndCaps(t *testing.T) {
	t.Parallel()
	h := sandbox.HostRunner{TempDir: t.TempDir()}
	start := time.Now()
	res, err := h.Run(context.Background(), sandbox.Program{RunID: uuid.New(), Language: sandbox.Shell, Source: "sleep 30 & sleep 30", Timeout: time.Second})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, sandbox.TimeoutExitCode, res.ExitCode, "killed at its timeout, never exit code 0 or -1")
	require.Equal(t, sandbox.TimeoutSignal, res.Signal)
	require.Less(t, time.Since(start), 5*time.Second)
	res, err = h.Run(context.Background(), sandbox.Program{RunID: uuid.New(), Language: sandbox.Python, Source: "import sys\nsys.stdout.write('x' * (3 << 20))", Timeout: 10 * time.Second})
	require.NoError(t, err)
	require.True(t, res.Cut)
	require.Len(t, res.Output, sandbox.ReplyCap)
}
