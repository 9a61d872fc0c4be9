package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkerHelpPromisesOnlyItsJobs: `visor help worker` names the jobs
// the worker runs (registerJobs and the dispatcher) and none it does not.
func TestWorkerHelpPromisesOnlyItsJobs(t *testing.T) {
	res := runCmd(t, nil, "help", "worker")
	require.NoError(t, res.err, res.stderr)
	for _, job := range []string{"wake-ups", "routines and reminders", "expired API keys", "OAuth codes"} {
		require.Contains(t, res.stdout, job)
	}
	for _, missing := range []string{"sandbox", "computer-use", "computer use", "responsibilit", "grant expiry", "browser"} {
		require.NotContains(t, res.stdout, missing, "the worker runs no such job")
	}
}
