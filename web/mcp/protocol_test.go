package mcp_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/web/mcp"
)

// TestVersionsNameTheStatelessEra: the versions the endpoint speaks include
// the stateless era, nothing newer is treated as session-based, and every
// older version is a session era.
func TestVersionsNameTheStatelessEra(t *testing.T) {
	t.Parallel()
	vs := mcp.Versions()
	require.Contains(t, vs, mcp.Stateless)
	require.True(t, mcp.IsStateless(slices.Max(vs)))
	for _, v := range vs {
		require.Equal(t, v >= mcp.Stateless, mcp.IsStateless(v), v)
	}
	require.False(t, mcp.IsStateless("2025-11-25"))
	require.False(t, mcp.IsStateless(""))
}
