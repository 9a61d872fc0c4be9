package redistest_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/redisx/redistest"
)

// TestHelperNeedsRedis is run as a subprocess by the test below.
func TestHelperNeedsRedis(t *testing.T) {
	if os.Getenv("REDISTEST_HELPER") != "1" {
		t.Skip("helper for TestMissingRedisSkipsLocallyAndFailsInCI")
	}
	redistest.New(t)
}

// TestMissingRedisSkipsLocallyAndFailsInCI: with Redis unreachable, a test
// that needs it is skipped with a loud reason on a developer machine, and
// fails when VISOR_TEST_REQUIRE_SERVICES=1, as CI sets.
func TestMissingRedisSkipsLocallyAndFailsInCI(t *testing.T) {
	t.Parallel()
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNeedsRedis$", "-test.v")
		cmd.Env = append(os.Environ(), "REDISTEST_HELPER=1", "VISOR_TEST_REDIS_URL=redis://127.0.0.1:1/0",
			"VISOR_TEST_REQUIRE_SERVICES="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	require.NoError(t, err, out)
	require.Contains(t, out, "SKIPPED: Redis unavailable")
	require.Contains(t, out, "set VISOR_TEST_REQUIRE_SERVICES=1 to make this a failure")

	out, err = run("1")
	require.Error(t, err, out)
	require.Contains(t, out, "Redis is required (VISOR_TEST_REQUIRE_SERVICES=1) but unavailable")
}
