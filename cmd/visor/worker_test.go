package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkerCommandRunsJobsAndStops: `visor worker` works the queue (the
// periodic key prune runs on start) and returns cleanly on shutdown.
func TestWorkerCommandRunsJobsAndStops(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := emptyMigrated(t)
	vars := testEnv(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var out lockedBuffer
	go func() {
		done <- run(ctx, []string{"worker"}, &env{getenv: func(k string) string { return vars[k] }, stdout: &out, stderr: &out})
	}()
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("worker exited early: %v\n%s", err, out.String())
		default:
		}
		return jobCompleted(t, url, "prune_keys")
	}, 30*time.Second, 200*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("worker did not stop")
	}
}
