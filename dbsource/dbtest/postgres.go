package dbtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// pgFixture is the tenant's data: accounts (every common type), a
// sequence, a function that writes, and an hr schema for allow lists.
var pgFixture = []string{
	`CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), big bigint, opened date,
		updated timestamptz, local timestamp, photo bytea, meta jsonb, ok boolean, ratio double precision, ref uuid)`,
	`INSERT INTO accounts VALUES
		(1, 'ada', 1234.50, 9007199254740993, '2024-02-29', '2024-03-01 12:00:00.123456+00', '2024-03-01 12:00:00', '\x00ff10', '{"tier": "gold", "n": 12345678901234567890}', true, 0.25, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
		(2, 'bob', -0.01, 2, NULL, NULL, NULL, NULL, NULL, NULL, 'NaN', NULL)`,
	`CREATE SEQUENCE ticket_seq`,
	`CREATE FUNCTION bump() RETURNS int LANGUAGE sql VOLATILE AS $$ UPDATE accounts SET balance = balance + 1 RETURNING 1 $$`,
	`CREATE SCHEMA hr`,
	`CREATE TABLE hr.salaries (who text, amount int)`,
	`INSERT INTO hr.salaries VALUES ('ada', 100)`,
}

// NewPostgres creates a tenant database on the test Postgres server.
func NewPostgres(t testing.TB) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		pgtest.Unavailable(t, "Postgres", err)
	}
	defer admin.Close(context.Background())
	suffix := randHex(6)
	d := &DB{Kind: dbsources.Postgres, Host: admin.Config().Host, Port: int(admin.Config().Port), Database: "tenantdb_" + suffix,
		Reader: Role{"tenant_ro_" + suffix, "ro-" + suffix}, Writer: Role{"tenant_rw_" + suffix, "rw-" + suffix}}
	for _, s := range []string{
		"CREATE DATABASE " + d.Database,
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", d.Reader.User, d.Reader.Password),
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", d.Writer.User, d.Writer.Password),
	} {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pgtest.AdminURL())
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+d.Database+" WITH (FORCE)")
		_, _ = c.Exec(context.Background(), "DROP ROLE IF EXISTS "+d.Reader.User)
		_, _ = c.Exec(context.Background(), "DROP ROLE IF EXISTS "+d.Writer.User)
	})
	dbURL := withDatabase(pgtest.AdminURL(), d.Database)
	d.Exec = func(t testing.TB, stmts ...string) {
		t.Helper()
		c, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			t.Fatalf("connect to %s: %v", d.Database, err)
		}
		defer c.Close(context.Background())
		for _, s := range stmts {
			if _, err := c.Exec(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	d.Exec(t, pgFixture...)
	d.Exec(t, "GRANT USAGE ON SCHEMA hr TO "+d.Reader.User, "GRANT SELECT ON ALL TABLES IN SCHEMA public, hr TO "+d.Reader.User,
		"ALTER TABLE accounts OWNER TO "+d.Writer.User, "ALTER SEQUENCE ticket_seq OWNER TO "+d.Writer.User,
		"ALTER FUNCTION bump() OWNER TO "+d.Writer.User, "ALTER SCHEMA public OWNER TO "+d.Writer.User,
		"GRANT ALL ON SCHEMA hr TO "+d.Writer.User, "ALTER TABLE hr.salaries OWNER TO "+d.Writer.User)
	d.Checksum = func(t testing.TB) string {
		t.Helper()
		c, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			t.Fatalf("connect to %s: %v", d.Database, err)
		}
		defer c.Close(context.Background())
		var sum string
		err = c.QueryRow(context.Background(), `SELECT
			(SELECT md5(string_agg(a::text, '|' ORDER BY id)) FROM accounts a) || ' ' ||
			(SELECT md5(string_agg(s::text, '|' ORDER BY who)) FROM hr.salaries s) || ' ' ||
			(SELECT last_value || '/' || is_called FROM ticket_seq) || ' ' ||
			(SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname IN ('public', 'hr'))`).Scan(&sum)
		if err != nil {
			t.Fatalf("checksum: %v", err)
		}
		return sum
	}
	return d
}

func withDatabase(url, db string) string {
	i := strings.LastIndex(url, "/")
	rest := ""
	if q := strings.Index(url[i:], "?"); q >= 0 {
		rest = url[i+q:]
	}
	return url[:i+1] + db + rest
}
