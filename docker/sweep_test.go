package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/dockertest"
)

// TestSweepRemovesOnlyItsKindAndWorkerAndSparesHeldOnes: a sweep of one
// worker's sandbox leftovers removes that worker's unheld containers and
// networks, and leaves another worker's, another kind's and a held one.
func TestSweepRemovesOnlyItsKindAndWorkerAndSparesHeldOnes(t *testing.T) {
	t.Parallel()
	image := dockertest.Sandbox(t)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	ctx := context.Background()
	worker, other := "test-"+uuid.NewString()[:8], "test-"+uuid.NewString()[:8]
	create := func(kind docker.Kind, worker, id string) string {
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Cmd: []string{"true"},
			Labels: docker.Labels(kind, worker, uuid.NewString(), id)}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}) })
		return c.ID
	}
	gone := create(docker.Sandbox, worker, "run-1")
	held := create(docker.Sandbox, worker, "run-2")
	theirs := create(docker.Sandbox, other, "run-3")
	browser := create(docker.Browser, worker, "session-1")
	nw, err := cli.NetworkCreate(ctx, "visor-test-"+uuid.NewString()[:8], network.CreateOptions{Internal: true,
		Labels: docker.Labels(docker.Sandbox, worker, "", "run-1")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.NetworkRemove(ctx, nw.ID) })

	n, err := docker.Sweep(ctx, cli, docker.Sandbox, worker, 0, func(id string) bool { return id == "run-2" })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = cli.ContainerInspect(ctx, gone)
	require.Error(t, err, "the worker's unheld leftover is gone")
	for _, kept := range []string{held, theirs, browser} {
		_, err = cli.ContainerInspect(ctx, kept)
		require.NoError(t, err, "kept: %s", kept)
	}
	_, err = cli.NetworkInspect(ctx, nw.ID, network.InspectOptions{})
	require.Error(t, err, "the worker's network is gone")

	n, err = docker.Sweep(ctx, cli, docker.Sandbox, "", time.Hour, nil)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is an hour old")
}
