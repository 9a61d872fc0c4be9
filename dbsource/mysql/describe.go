package mysql

import (
	"context"
	"database/sql"
	"strings"

	"github.com/visorhq/visor/services/dbsources"
)

// describeSQL lists the columns of the tables and views the account may
// see, outside the server's own schemas; the allow lists filter the rows.
const describeSQL = `
SELECT c.TABLE_SCHEMA, c.TABLE_NAME, CASE WHEN t.TABLE_TYPE = 'VIEW' THEN 'view' ELSE 'table' END,
	c.COLUMN_NAME, c.COLUMN_TYPE, c.IS_NULLABLE = 'YES'
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
WHERE c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION`

// Describe lists the tables within the target's allow lists, at most
// maxTables of them, and no more than its byte cap of names and types.
func (d *Driver) Describe(ctx context.Context, t dbsources.Target, maxTables int) (dbsources.Schema, error) {
	out := dbsources.NewSchemaCutter(maxTables, t.Limits.MaxBytes)
	err := d.readOnly(ctx, t, func(c *sql.Conn, cut func()) error {
		rows, err := c.QueryContext(ctx, describeSQL)
		if err != nil {
			return err
		}
		defer rows.Close()
		var schema, rel, kind string
		var col dbsources.TableColumn
		for rows.Next() {
			if err := rows.Scan(&schema, &rel, &kind, &col.Name, &col.Type, &col.Nullable); err != nil {
				return err
			}
			if !t.Scope.Allows(schema, rel) {
				continue
			}
			col.Type = strings.ToLower(col.Type)
			if !out.Add(schema, rel, kind, col) {
				break
			}
		}
		return rows.Err()
	})
	return out.Schema, err
}
