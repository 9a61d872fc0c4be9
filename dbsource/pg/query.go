package pg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

// Check connects, refuses a superuser role (it could leave the read-only
// transaction's rules behind), and runs a trivial read.
func (d *Driver) Check(ctx context.Context, t dbsources.Target) error {
	return d.readOnly(ctx, t, func(c *pgx.Conn) error {
		var super bool
		if err := c.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
			return err
		}
		if super {
			return fault.New(fault.Invalid, "the role %s is a superuser; connect as a role that may only read (docs/db-sources.md)", t.Endpoint.User)
		}
		return nil
	})
}

// Query runs sql, one read statement, and collects its rows under the caps.
func (d *Driver) Query(ctx context.Context, t dbsources.Target, sql string) (a dbsources.Answer, err error) {
	err = d.readOnly(ctx, t, func(c *pgx.Conn) error {
		if err := checkScope(ctx, c, t.Scope, sql); err != nil {
			return err
		}
		qctx, stop := context.WithCancel(ctx)
		defer stop()
		rows, err := c.Query(qctx, sql)
		if err != nil {
			return err
		}
		defer rows.Close()
		b := dbsource.NewBuilder(columns(c, rows), t.Limits)
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			if !b.Add(encodeRow(rows.FieldDescriptions(), vals, rows.RawValues())) {
				break
			}
		}
		a = b.Answer()
		if a.Truncated {
			// Stop the statement on the server rather than read the rest of
			// its rows; the connection is then closed (errCut).
			stop()
			rows.Close()
			return errCut
		}
		rows.Close()
		return rows.Err()
	})
	if errors.Is(err, errCut) {
		err = nil
	}
	return a, err
}

// errCut ends a transaction whose answer a cap cut: not a failure, but its
// connection is not reused.
var errCut = errors.New("answer cut by a cap")

// Explain returns the plan of sql as JSON, without running it.
func (d *Driver) Explain(ctx context.Context, t dbsources.Target, sql string) (a dbsources.Answer, err error) {
	err = d.readOnly(ctx, t, func(c *pgx.Conn) error {
		if err := checkScope(ctx, c, t.Scope, sql); err != nil {
			return err
		}
		var plan json.RawMessage
		if err := c.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql).Scan(&plan); err != nil {
			return err
		}
		b := dbsource.NewBuilder([]dbsources.Column{{Name: "QUERY PLAN", Type: "json"}}, t.Limits)
		b.Add([]any{plan})
		a = b.Answer()
		return nil
	})
	return a, err
}

// checkScope refuses a statement whose plan reads a relation outside the
// source's allow lists. The database names the relations (EXPLAIN
// VERBOSE), so a view or an alias does not hide one.
func checkScope(ctx context.Context, c *pgx.Conn, sc dbsources.Scope, sql string) error {
	if len(sc.Schemas) == 0 && len(sc.Tables) == 0 {
		return nil
	}
	var plan []struct{ Plan json.RawMessage }
	if err := c.QueryRow(ctx, "EXPLAIN (VERBOSE, FORMAT JSON) "+sql).Scan(&plan); err != nil {
		return err
	}
	var bad []string
	for _, p := range plan {
		var tree any
		if err := json.Unmarshal(p.Plan, &tree); err != nil {
			return err
		}
		walk(tree, func(schema, rel string) {
			if !sc.Allows(schema, rel) && !slices.Contains(bad, schema+"."+rel) {
				bad = append(bad, schema+"."+rel)
			}
		})
	}
	if len(bad) > 0 {
		return fault.New(fault.Forbidden, "the query reads %v, outside this source's allow lists", bad)
	}
	return nil
}

// walk calls fn for every relation a plan node scans.
func walk(node any, fn func(schema, rel string)) {
	switch n := node.(type) {
	case map[string]any:
		if rel, ok := n["Relation Name"].(string); ok {
			schema, _ := n["Schema"].(string)
			fn(schema, rel)
		}
		for _, v := range n {
			walk(v, fn)
		}
	case []any:
		for _, v := range n {
			walk(v, fn)
		}
	}
}

func columns(c *pgx.Conn, rows pgx.Rows) []dbsources.Column {
	fds := rows.FieldDescriptions()
	cols := make([]dbsources.Column, len(fds))
	for i, fd := range fds {
		typ := fmt.Sprintf("oid:%d", fd.DataTypeOID)
		if t, ok := c.TypeMap().TypeForOID(fd.DataTypeOID); ok {
			typ = t.Name
		}
		cols[i] = dbsources.Column{Name: fd.Name, Type: typ}
	}
	return cols
}
