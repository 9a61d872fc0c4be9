package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFDBudgetLeavesHeadroom: streams stay below connections, and
// connections below the open-file limit, at every size.
func TestFDBudgetLeavesHeadroom(t *testing.T) {
	t.Parallel()
	for _, n := range []int{64, 1024, 65536, 1 << 20} {
		conns, streams := fdBudget(n)
		require.Less(t, conns, n, "n=%d", n)
		require.Less(t, streams, conns, "n=%d", n)
		require.Positive(t, streams, "n=%d", n)
	}
	conns, streams := fdBudget(1024)
	require.Equal(t, []int{896, 640}, []int{conns, streams})
	conns, streams = fdBudget(0)
	require.Equal(t, []int{0, 0}, []int{conns, streams}, "an unknown limit caps nothing")
}

// TestScaleConfig: the defaults derive the limits from this process's
// open-file limit; explicit values are kept; a stream limit at or over the
// connection cap is refused in one line naming it, unless h2c lets streams
// share connections.
func TestScaleConfig(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(func(string) string { return "" })
	require.NoError(t, err)
	conns, streams := fdBudget(openFileLimit())
	require.Equal(t, conns, c.Scale.MaxConns)
	require.Equal(t, streams, c.Scale.MaxStreams)
	require.Equal(t, 1000, c.Scale.StreamsPerCred)
	require.EqualValues(t, 40, c.Scale.WorkerDBPool)
	require.Equal(t, 200, c.Scale.RoundsConcurrency)
	require.Equal(t, 20, c.Scale.ResponsibilitiesConcurrency)

	env := map[string]string{"VISOR_MCP_MAX_STREAMS": "500", "VISOR_HTTP_MAX_CONNECTIONS": "800", "VISOR_WORKER_DB_POOL": "8"}
	c, err = LoadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, []int{500, 800, 8}, []int{c.Scale.MaxStreams, c.Scale.MaxConns, int(c.Scale.WorkerDBPool)})

	env = map[string]string{"VISOR_MCP_MAX_STREAMS": "900", "VISOR_HTTP_MAX_CONNECTIONS": "800", "VISOR_WORKER_DB_POOL": "1"}
	_, err = LoadConfig(func(k string) string { return env[k] })
	require.ErrorContains(t, err, "VISOR_MCP_MAX_STREAMS: 900 must be below VISOR_HTTP_MAX_CONNECTIONS (800)")
	require.ErrorContains(t, err, `VISOR_WORKER_DB_POOL: "1" must be a number 2-1000`)

	// Over h2c streams share connections, so they may outnumber them.
	env = map[string]string{"VISOR_MCP_MAX_STREAMS": "900", "VISOR_HTTP_MAX_CONNECTIONS": "800", "VISOR_HTTP_H2C": "true"}
	c, err = LoadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.True(t, c.Scale.H2C)
	require.Equal(t, 900, c.Scale.MaxStreams)
	_, err = LoadConfig(func(k string) string { return map[string]string{"VISOR_HTTP_H2C": "maybe"}[k] })
	require.ErrorContains(t, err, `VISOR_HTTP_H2C: "maybe" must be true or false`)
}
