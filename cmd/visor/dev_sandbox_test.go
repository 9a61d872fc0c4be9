package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/sandbox"
)

// TestDevRunsASandboxWorkerWhenItCan: visor dev runs a sandbox worker in
// its own process when the engine holds the image, says how to get one
// when it cannot, and never overrides an explicit VISOR_SANDBOX_WORKER.
func TestDevRunsASandboxWorkerWhenItCan(t *testing.T) {
	ctx := context.Background()
	cfgWith := func(worker bool) Config {
		return Config{Sandbox: SandboxConfig{Images: []string{"visor-sandbox"}, Worker: worker}}
	}
	present := func(context.Context, string) error { return nil }
	missing := func(_ context.Context, image string) error {
		return sandbox.Unavailable("image_missing", image, "the image is not on the worker", nil)
	}
	unreachable := func(_ context.Context, image string) error {
		return sandbox.Unavailable("docker_unreachable", image, "the Docker Engine cannot be reached", nil)
	}
	probed := false
	never := func(context.Context, string) error { probed = true; return nil }

	cfg := cfgWith(false)
	line := devSandbox(ctx, &cfg, "", present)
	require.True(t, cfg.Sandbox.Worker, line)
	require.Contains(t, line, "sandbox worker running in this process")

	cfg = cfgWith(false)
	line = devSandbox(ctx, &cfg, "", missing)
	require.False(t, cfg.Sandbox.Worker)
	require.Contains(t, line, "docker build -t visor-sandbox deploy/sandbox")
	require.True(t, strings.HasSuffix(line, "then restart visor dev"), line)

	cfg = cfgWith(false)
	line = devSandbox(ctx, &cfg, "", unreachable)
	require.False(t, cfg.Sandbox.Worker)
	require.Contains(t, line, "Start the Docker Engine")

	cfg = cfgWith(false)
	line = devSandbox(ctx, &cfg, "false", never)
	require.False(t, cfg.Sandbox.Worker)
	require.Contains(t, line, "VISOR_SANDBOX_WORKER=false")
	cfg = cfgWith(true)
	require.Contains(t, devSandbox(ctx, &cfg, "true", never), "VISOR_SANDBOX_WORKER=true")
	require.False(t, probed, "an explicit setting is not second-guessed")
}
