package dbsources_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/dbsources"
)

// TestSchemaCutterGroupsColumnsAndStopsAtACap: columns of one table stay
// together, and a table past the table cap is not started.
func TestSchemaCutterGroupsColumnsAndStopsAtACap(t *testing.T) {
	t.Parallel()
	c := dbsources.NewSchemaCutter(2, 1<<20)
	col := func(n string) dbsources.TableColumn { return dbsources.TableColumn{Name: n, Type: "int"} }
	require.True(t, c.Add("public", "a", "table", col("x")))
	require.True(t, c.Add("public", "a", "table", col("y")))
	require.True(t, c.Add("public", "b", "view", col("z")))
	require.False(t, c.Add("public", "c", "table", col("w")))
	require.True(t, c.Schema.Truncated)
	require.Len(t, c.Schema.Tables, 2)
	require.Len(t, c.Schema.Tables[0].Columns, 2)
	require.Equal(t, "view", c.Schema.Tables[1].Kind)

	small := dbsources.NewSchemaCutter(100, 10)
	require.True(t, small.Add("public", "a_long_table_name", "table", col("x")))
	require.False(t, small.Add("public", "b", "table", col("y")), "past the byte cap no new table starts")
	require.True(t, small.Schema.Truncated)
}
