package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestComputerWorkerConfig: a computer worker needs the browser image, and
// its caps and sweep period are bounded; each problem names its variable.
func TestComputerWorkerConfig(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) (Config, error) {
		return LoadConfig(func(k string) string { return env[k] })
	}
	c, err := load(nil)
	require.NoError(t, err)
	require.False(t, c.Computer.Worker, "serve and plain workers hold no browser")
	require.Equal(t, 8, c.Computer.MaxSessions)
	require.Equal(t, 30*time.Second, c.Computer.SweepEvery)

	c, err = load(map[string]string{"VISOR_COMPUTER_WORKER": "true", "VISOR_COMPUTER_IMAGE": "visor-browser:abc", "VISOR_COMPUTER_MAX_SESSIONS": "3",
		"VISOR_COMPUTER_SWEEP_EVERY": "1s"})
	require.NoError(t, err)
	require.True(t, c.Computer.Worker)
	require.Equal(t, 3, c.Computer.MaxSessions)
	require.Equal(t, time.Second, c.Computer.SweepEvery)

	_, err = load(map[string]string{"VISOR_COMPUTER_WORKER": "yes please", "VISOR_COMPUTER_MAX_SESSIONS": "0", "VISOR_COMPUTER_SWEEP_EVERY": "10ms"})
	require.Error(t, err)
	for _, name := range []string{"VISOR_COMPUTER_WORKER", "VISOR_COMPUTER_MAX_SESSIONS", "VISOR_COMPUTER_SWEEP_EVERY"} {
		require.Contains(t, err.Error(), name+": ")
	}
	_, err = load(map[string]string{"VISOR_COMPUTER_WORKER": "true"})
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "VISOR_COMPUTER_IMAGE: "), err.Error())
}

// A browser session that mounts a workspace is sent to the computer
// worker of the process whose workspace worker holds it.
func TestTheBrowserWorkerOfAWorkspaceWorkerIsInTheSameProcess(t *testing.T) {
	a := &app{cfg: Config{Sandbox: SandboxConfig{WorkerID: "host-7"}}}
	require.Equal(t, a.computerWorkerID(), browserWorkerOf(a.workspaceWorkerID()))
	require.Equal(t, "w-workspace-2-browser", browserWorkerOf("w-workspace-2-workspace"), "only the suffix is replaced")
}
