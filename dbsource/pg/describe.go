package pg

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/dbsources"
)

// describeSQL lists the columns of every table, view and foreign table the
// role may read, within the allow lists, in one pass over the catalog.
const describeSQL = `
SELECT n.nspname, c.relname, CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END,
	a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
	AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
	AND has_table_privilege(c.oid, 'SELECT')
	AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1))
	AND (cardinality($2::text[]) = 0 OR n.nspname || '.' || c.relname = ANY($2))
ORDER BY n.nspname, c.relname, a.attnum`

// Describe lists the tables within the target's allow lists, at most
// maxTables of them, and no more than its byte cap of names and types.
func (d *Driver) Describe(ctx context.Context, t dbsources.Target, maxTables int) (dbsources.Schema, error) {
	out := dbsources.NewSchemaCutter(maxTables, t.Limits.MaxBytes)
	err := d.readOnly(ctx, t, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, describeSQL, nonNil(t.Scope.Schemas), nonNil(t.Scope.Tables))
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
			if !out.Add(schema, rel, kind, col) {
				break
			}
		}
		rows.Close()
		return rows.Err()
	})
	return out.Schema, err
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
