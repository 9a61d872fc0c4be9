package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
)

// TestLostNeverSaysTheScriptDidNotRun: a lost worker's error says whether
// the script had started and that its effects must be checked; it is
// unavailable, and a run recorded with it reads as worker_lost.
func TestLostNeverSaysTheScriptDidNotRun(t *testing.T) {
	for _, tc := range []struct {
		cause error
		want  string
	}{
		{&plane.LostError{Worker: "w1", Started: true}, "The script had started and may have run in part or to the end: check its effects before running it again"},
		{&plane.LostError{Worker: "w1"}, "The worker had taken the script and may have started it: check its effects before running it again"},
		{plane.ErrWorkerLost, "may have started it"},
	} {
		err := lost(tc.cause)
		require.True(t, fault.Is(err, fault.Unavailable))
		msg := fault.Message(err)
		require.Contains(t, msg, tc.want)
		require.NotContains(t, msg, "not run")
		require.Equal(t, "worker_lost", Run{State: RunUnavailable, Detail: msg}.Reason())
	}
}
