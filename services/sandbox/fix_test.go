package sandbox_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/sandbox"
)

// TestUnavailableGivesTheFixForItsCause: only a missing image is answered
// with a pull; a missing worker says how to start one.
func TestUnavailableGivesTheFixForItsCause(t *testing.T) {
	for _, code := range sandbox.UnavailableCodes {
		msg := fault.Message(sandbox.Unavailable(code, "visor-sandbox", "why", nil))
		require.True(t, strings.HasPrefix(msg, "Script sandbox unavailable ("+code+"): why. The script was not run. "), msg)
		require.Equal(t, code == "image_missing", strings.Contains(msg, "docker pull"), "%s: %s", code, msg)
	}
	msg := fault.Message(sandbox.Unavailable("no_worker", "visor-sandbox", "no sandbox worker is running", nil))
	require.Contains(t, msg, "VISOR_SANDBOX_WORKER=true")
	require.Contains(t, msg, "visor dev")
}
