package dbsources

// SchemaCutter builds a Schema from rows of columns ordered by table, and
// applies the describe caps the same way for every driver: at most
// maxTables tables, and no new table once about maxBytes of names and
// types were listed.
type SchemaCutter struct {
	Schema    Schema
	maxTables int
	maxBytes  int
	size      int
}

// NewSchemaCutter returns a cutter with the given caps.
func NewSchemaCutter(maxTables, maxBytes int) *SchemaCutter {
	return &SchemaCutter{Schema: Schema{Tables: []Table{}}, maxTables: maxTables, maxBytes: maxBytes}
}

// Add adds one column of schema.rel (a table of kind). It reports false,
// with Schema.Truncated set, when the column's table would pass a cap:
// the caller stops reading then.
func (c *SchemaCutter) Add(schema, rel, kind string, col TableColumn) bool {
	tables := c.Schema.Tables
	n := len(tables)
	if n == 0 || tables[n-1].Schema != schema || tables[n-1].Name != rel {
		if n == c.maxTables || c.size > c.maxBytes {
			c.Schema.Truncated = true
			return false
		}
		c.Schema.Tables = append(c.Schema.Tables, Table{Schema: schema, Name: rel, Kind: kind})
		c.size += len(schema) + len(rel) + 50
	}
	last := &c.Schema.Tables[len(c.Schema.Tables)-1]
	last.Columns = append(last.Columns, col)
	c.size += len(col.Name) + len(col.Type) + 40
	return true
}
