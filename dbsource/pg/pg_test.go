package pg_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/dbsource/dbtest"
	"github.com/visorhq/visor/dbsource/pg"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

var loopback = dbsource.Allow{Nets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

func driver(t *testing.T) *pg.Driver {
	d := pg.New(loopback)
	t.Cleanup(d.Close)
	return d
}

// run is what the service does with a query: the statement rules, then
// the driver.
func run(ctx context.Context, d dbsources.Driver, tg dbsources.Target, sql string) (dbsources.Answer, error) {
	if err := dbsources.CheckStatement(tg.Kind, sql); err != nil {
		return dbsources.Answer{}, err
	}
	return d.Query(ctx, tg, sql)
}

// TestWritesAreRefusedAndLeaveTheDataUnchanged connects as the role that
// owns the tables (so only the read-only transaction and the statement
// rules stand in the way) and tries to write every way we know; every
// attempt fails and the data, sequence and tables are as they were.
func TestWritesAreRefusedAndLeaveTheDataUnchanged(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	d := driver(t)
	tg := db.Target(db.Writer)
	before := db.Checksum(t)
	ctx := context.Background()
	// Refused by the database itself, even sent without the statement
	// rules: the transaction is read-only, the protocol takes one statement.
	byDatabase := []string{
		"INSERT INTO accounts (id, owner) VALUES (9, 'eve')",
		"UPDATE accounts SET balance = 0",
		"DELETE FROM accounts",
		"DROP TABLE accounts",
		"CREATE TABLE evil (a int)",
		"TRUNCATE accounts",
		"ALTER TABLE accounts ADD COLUMN evil int",
		"GRANT ALL ON accounts TO PUBLIC",
		"WITH d AS (DELETE FROM accounts RETURNING *) SELECT count(*) FROM d",
		"WITH u AS (UPDATE accounts SET balance = 0 RETURNING 1) SELECT * FROM u",
		"SELECT bump()",
		"SELECT nextval('ticket_seq')",
		"SELECT setval('ticket_seq', 99)",
		"SELECT * FROM accounts FOR UPDATE",
		"SELECT 1; INSERT INTO accounts (id, owner) VALUES (9, 'eve')",
		"COMMIT; INSERT INTO accounts (id, owner) VALUES (9, 'eve')",
		"SET TRANSACTION READ WRITE",
		"SELECT set_config('transaction_read_only', 'off', true), bump()",
		"COPY accounts FROM STDIN",
		"SELECT * INTO evil FROM accounts",
		"CREATE TEMP TABLE evil AS SELECT 1",
	}
	for _, sql := range byDatabase {
		_, err := d.Query(ctx, tg, sql)
		require.Error(t, err, "sent straight to the driver: %s", sql)
	}
	// Refused before they are sent (and by the database too, for most).
	byRules := append([]string{
		"SET TRANSACTION READ WRITE; INSERT INTO accounts (id, owner) VALUES (9, 'eve')",
		"BEGIN READ WRITE",
		"COPY accounts TO STDOUT",
		"COPY (SELECT 1) TO PROGRAM 'touch /tmp/evil'",
		"DO $$ BEGIN INSERT INTO accounts (id, owner) VALUES (9, 'eve'); END $$",
		"CALL wipe()",
		"/* hi */ INSERT INTO accounts (id, owner) VALUES (9, 'eve')",
		"EXPLAIN ANALYZE DELETE FROM accounts",
		"SELECT pg_advisory_lock(1)",
		"SELECT * FROM accounts FOR SHARE",
		"SELECT * FROM accounts FOR NO KEY UPDATE",
		"SET statement_timeout = 0",
		"RESET ALL",
		"SELECT 1 -- ok\n; DELETE FROM accounts",
		"SELECT $$;$$; DELETE FROM accounts",
		"PREPARE p AS DELETE FROM accounts",
		"VACUUM accounts",
		"LOCK TABLE accounts", // a read-only transaction may lock; the rules refuse it
	}, byDatabase...)
	for _, sql := range byRules {
		_, err := run(ctx, d, tg, sql)
		require.Error(t, err, "through the service's rules: %s", sql)
	}
	require.Equal(t, before, db.Checksum(t), "nothing changed")
	// The same role still reads.
	a, err := run(ctx, d, tg, "SELECT count(*) AS n FROM accounts")
	require.NoError(t, err)
	require.Equal(t, [][]any{{int64(2)}}, a.Rows)
}

func TestRunawayQueryIsStoppedByTheStatementTimeout(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	tg := db.Target(db.Reader)
	tg.Limits.StatementTimeout = 300 * time.Millisecond
	_, err := run(context.Background(), driver(t), tg, "SELECT pg_sleep(60)")
	require.ErrorContains(t, err, "statement timeout")
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
}

// TestCancelStopsTheQueryOnTheServer: when the caller gives up, the
// statement ends on the server too (a cancel request), not only here.
func TestCancelStopsTheQueryOnTheServer(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	tg := db.Target(db.Reader)
	tg.Limits.StatementTimeout = 120 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, driver(t), tg, "SELECT pg_sleep(90) AS marker_"+db.Database)
		done <- err
	}()
	admin, err := pgx.Connect(context.Background(), pgtest.AdminURL())
	require.NoError(t, err)
	defer admin.Close(context.Background())
	running := func() int {
		var n int
		require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND query LIKE '%marker_'||$1||'%' AND pid <> pg_backend_pid()`, db.Database).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return running() == 1 }, 30*time.Second, 20*time.Millisecond, "the query starts")
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return running() == 0 }, 30*time.Second, 20*time.Millisecond, "the server stopped the statement")
}

func TestAnswersAreTypedAndStable(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	a, err := run(context.Background(), driver(t), db.Target(db.Reader), "SELECT * FROM accounts ORDER BY id")
	require.NoError(t, err)
	require.False(t, a.Truncated)
	types := map[string]string{}
	for _, c := range a.Columns {
		types[c.Name] = c.Type
	}
	require.Equal(t, map[string]string{"id": "int4", "owner": "text", "balance": "numeric", "big": "int8", "opened": "date",
		"updated": "timestamptz", "local": "timestamp", "photo": "bytea", "meta": "jsonb", "ok": "bool", "ratio": "float8", "ref": "uuid"}, types)
	got, err := json.Marshal(a.Rows)
	require.NoError(t, err)
	require.JSONEq(t, `[
		[1, "ada", "1234.50", "9007199254740993", "2024-02-29", "2024-03-01T12:00:00.123456Z", "2024-03-01T12:00:00", "AP8Q",
		 {"n": 12345678901234567890, "tier": "gold"}, true, 0.25, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],
		[2, "bob", "-0.01", 2, null, null, null, null, null, null, "NaN", null]]`, string(got))
	require.Contains(t, string(got), `12345678901234567890`, "JSON numbers are kept as written")
}

func TestCapsCutTheAnswer(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	d := driver(t)
	tg := db.Target(db.Reader)
	tg.Limits.MaxRows = 10
	// The statement never ends by itself (and the timeout is the default
	// 10 s, which would fail it): the cut stops it on the server.
	a, err := run(context.Background(), d, tg, "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT n FROM r")
	require.NoError(t, err)
	require.True(t, a.Truncated)
	require.Equal(t, dbsources.CapRows, a.Cap)
	require.Len(t, a.Rows, 10)

	tg = db.Target(db.Reader)
	tg.Limits.MaxBytes = 1024
	a, err = run(context.Background(), d, tg, "SELECT repeat('x', 100) FROM generate_series(1, 1000)")
	require.NoError(t, err)
	require.Equal(t, dbsources.CapBytes, a.Cap)
	require.Len(t, a.Rows, 9, "nine rows of 106 bytes fit in 1 KiB")

	a, err = run(context.Background(), d, db.Target(db.Reader), "SELECT g FROM generate_series(1, 3) g")
	require.NoError(t, err)
	require.False(t, a.Truncated)
	require.Empty(t, a.Cap)
}

func TestDescribeAndQueriesStayWithinTheAllowLists(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	d := driver(t)
	tg := db.Target(db.Reader)
	sc, err := d.Describe(context.Background(), tg, 100)
	require.NoError(t, err)
	var names []string
	for _, tb := range sc.Tables {
		names = append(names, tb.Schema+"."+tb.Name)
	}
	require.Equal(t, []string{"hr.salaries", "public.accounts"}, names)
	require.Equal(t, dbsources.TableColumn{Name: "balance", Type: "numeric(12,2)", Nullable: true}, sc.Tables[1].Columns[2])

	tg.Scope = dbsources.Scope{Schemas: []string{"public"}}
	sc, err = d.Describe(context.Background(), tg, 100)
	require.NoError(t, err)
	require.Len(t, sc.Tables, 1)
	require.Equal(t, "accounts", sc.Tables[0].Name)
	_, err = run(context.Background(), d, tg, "SELECT * FROM hr.salaries")
	require.True(t, fault.Is(err, fault.Forbidden), "a table outside the allow lists: %v", err)
	_, err = run(context.Background(), d, tg, "WITH x AS (SELECT * FROM hr.salaries) SELECT a.id FROM accounts a, x")
	require.ErrorContains(t, err, "hr.salaries")
	_, err = run(context.Background(), d, tg, "SELECT id FROM accounts")
	require.NoError(t, err)
	_, err = d.Explain(context.Background(), tg, "SELECT * FROM hr.salaries")
	require.True(t, fault.Is(err, fault.Forbidden), "explain too: %v", err)

	sc, err = d.Describe(context.Background(), db.Target(db.Reader), 1)
	require.NoError(t, err)
	require.True(t, sc.Truncated)
	require.Len(t, sc.Tables, 1)
}

func TestExplainDoesNotRun(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	a, err := driver(t).Explain(context.Background(), db.Target(db.Reader), "SELECT * FROM accounts WHERE id = 1")
	require.NoError(t, err)
	require.Len(t, a.Rows, 1)
	plan, err := json.Marshal(a.Rows[0][0])
	require.NoError(t, err)
	require.Contains(t, string(plan), `"Relation Name":"accounts"`)
	require.NotContains(t, string(plan), "Actual", "the statement was not run")
}

func TestCheck(t *testing.T) {
	t.Parallel()
	db := dbtest.NewPostgres(t)
	ctx := context.Background()
	require.NoError(t, driver(t).Check(ctx, db.Target(db.Reader)))

	super := db.Target(dbtest.Role{User: "postgres"})
	err := driver(t).Check(ctx, super)
	require.ErrorContains(t, err, "superuser")

	// Without the allow list, a loopback database is refused at dial time.
	err = pg.New(dbsource.Allow{}).Check(ctx, db.Target(db.Reader))
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	require.ErrorContains(t, err, "VISOR_DB_ALLOWED_NETWORKS")
	// A host allowed by name may resolve anywhere.
	named := db.Target(db.Reader)
	named.Endpoint.Host = "localhost"
	require.NoError(t, pg.New(dbsource.Allow{Hosts: []string{"localhost"}}).Check(ctx, named))

	bad := db.Target(db.Reader)
	bad.Endpoint.Database = "no_such_db_here"
	err = driver(t).Check(ctx, bad)
	require.True(t, fault.Is(err, fault.Unavailable), "%v", err)
	require.ErrorContains(t, err, "no_such_db_here")
}
