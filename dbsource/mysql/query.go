package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

// Check connects, refuses an account holding every privilege or SUPER,
// and runs a trivial read.
func (d *Driver) Check(ctx context.Context, t dbsources.Target) error {
	return d.readOnly(ctx, t, func(c *sql.Conn, _ func()) error {
		rows, err := c.QueryContext(ctx, "SHOW GRANTS")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				return err
			}
			up := strings.ToUpper(g)
			if strings.Contains(up, "ALL PRIVILEGES ON *.*") || strings.Contains(up, " SUPER") {
				return fault.New(fault.Invalid, "the account %s holds every privilege or SUPER; connect as an account that may only read (docs/db-sources.md)", t.Endpoint.User)
			}
		}
		return rows.Err()
	})
}

// Query runs sql, one read statement, and collects its rows under the caps.
func (d *Driver) Query(ctx context.Context, t dbsources.Target, query string) (a dbsources.Answer, err error) {
	err = d.readOnly(ctx, t, func(c *sql.Conn, cut func()) error {
		var err error
		a, err = collect(ctx, c, t.Limits, query, cut)
		return err
	})
	if errors.Is(err, errCut) {
		err = nil
	}
	return a, err
}

// Explain returns the plan of sql as JSON (EXPLAIN FORMAT=JSON), without
// running it.
func (d *Driver) Explain(ctx context.Context, t dbsources.Target, query string) (a dbsources.Answer, err error) {
	err = d.readOnly(ctx, t, func(c *sql.Conn, _ func()) error {
		var plan string
		if err := c.QueryRowContext(ctx, "EXPLAIN FORMAT=JSON "+query).Scan(&plan); err != nil {
			return err
		}
		b := dbsource.NewBuilder([]dbsources.Column{{Name: "EXPLAIN", Type: "JSON"}}, t.Limits)
		var v any = plan
		if json.Valid([]byte(plan)) {
			v = json.RawMessage(plan)
		}
		b.Add([]any{v})
		a = b.Answer()
		return nil
	})
	return a, err
}

func collect(ctx context.Context, c *sql.Conn, lim dbsources.Limits, query string, cut func()) (dbsources.Answer, error) {
	rows, err := c.QueryContext(ctx, query)
	if err != nil {
		return dbsources.Answer{}, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return dbsources.Answer{}, err
	}
	cols := make([]dbsources.Column, len(types))
	for i, ct := range types {
		cols[i] = dbsources.Column{Name: ct.Name(), Type: ct.DatabaseTypeName()}
	}
	b := dbsource.NewBuilder(cols, lim)
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return dbsources.Answer{}, err
		}
		row := make([]any, len(cols))
		for i, r := range raw {
			row[i] = encode(cols[i].Type, r)
		}
		if !b.Add(row) {
			cut()
			return b.Answer(), errCut
		}
	}
	return b.Answer(), rows.Err()
}
