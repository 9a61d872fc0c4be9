package mysql_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the administrator's connection in the cancel test
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/dbsource/dbtest"
	"github.com/visorhq/visor/dbsource/mysql"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

var loopback = dbsource.Allow{Nets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

func driver(t *testing.T) *mysql.Driver {
	d := mysql.New(loopback)
	t.Cleanup(d.Close)
	return d
}

func run(ctx context.Context, d dbsources.Driver, tg dbsources.Target, sql string) (dbsources.Answer, error) {
	if err := dbsources.CheckStatement(tg.Kind, sql); err != nil {
		return dbsources.Answer{}, err
	}
	return d.Query(ctx, tg, sql)
}

// TestWritesAreRefusedAndLeaveTheDataUnchanged connects as an account that
// may write the tenant's database, so only the read-only transaction and
// the statement rules stand in the way.
func TestWritesAreRefusedAndLeaveTheDataUnchanged(t *testing.T) {
	t.Parallel()
	db := dbtest.NewMariaDB(t)
	d := driver(t)
	tg := db.Target(db.Writer)
	before := db.Checksum(t)
	ctx := context.Background()
	byDatabase := []string{
		"INSERT INTO accounts (id, owner) VALUES (9, 'eve')",
		"UPDATE accounts SET balance = 0",
		"DELETE FROM accounts",
		"REPLACE INTO accounts (id, owner) VALUES (1, 'eve')",
		"SELECT bump()",
		"SELECT 1; DELETE FROM accounts",
		"COMMIT; INSERT INTO accounts (id, owner) VALUES (9, 'eve')",
		"SET TRANSACTION READ WRITE",
		"LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE accounts",
		"CALL wipe()",
		"SELECT * FROM accounts INTO OUTFILE '/tmp/visor-evil'",
	}
	for _, sql := range byDatabase {
		_, err := d.Query(ctx, tg, sql)
		require.Error(t, err, "sent straight to the driver: %s", sql)
	}
	byRules := append([]string{
		"SET SESSION max_statement_time = 0",
		"SET @@session.transaction_read_only = 0",
		"SELECT @x := 1",
		"SELECT 1 INTO @x",
		"SELECT * FROM accounts INTO DUMPFILE '/tmp/visor-evil'",
		"SELECT * FROM accounts FOR UPDATE",
		"SELECT * FROM accounts LOCK IN SHARE MODE",
		"SELECT GET_LOCK('x', 1)",
		"SELECT LOAD_FILE('/etc/passwd')",
		"/*! DELETE FROM accounts */ SELECT 1",
		"SELECT 1 # ok\n; DELETE FROM accounts",
		"DROP TABLE accounts",
		"CREATE TABLE evil (a INT)",
		"TRUNCATE accounts",
		"HANDLER accounts OPEN",
		"DO SLEEP(1)",
		"LOCK TABLES accounts WRITE",
	}, byDatabase...)
	for _, sql := range byRules {
		_, err := run(ctx, d, tg, sql)
		require.Error(t, err, "through the service's rules: %s", sql)
	}
	require.Equal(t, before, db.Checksum(t), "nothing changed")
	a, err := run(ctx, d, tg, "SELECT COUNT(*) AS n FROM accounts")
	require.NoError(t, err)
	require.Equal(t, [][]any{{int64(2)}}, a.Rows)
	// The rules read strings as the server does (backslash escapes are on
	// for every session): this is one string, not two statements.
	a, err = run(ctx, d, tg, "SELECT '\\'; DELETE FROM accounts; -- ' AS s")
	require.NoError(t, err)
	require.Equal(t, [][]any{{"'; DELETE FROM accounts; -- "}}, a.Rows)
}

func TestRunawayQueryIsStoppedByTheStatementTimeout(t *testing.T) {
	t.Parallel()
	db := dbtest.NewMariaDB(t)
	tg := db.Target(db.Reader)
	tg.Limits.StatementTimeout = 300 * time.Millisecond
	// SLEEP is interrupted without an error; a heavy statement is not.
	_, err := run(context.Background(), driver(t), tg,
		"SELECT COUNT(*) FROM information_schema.COLUMNS a, information_schema.COLUMNS b, information_schema.COLUMNS c")
	require.ErrorContains(t, err, "statement timeout")
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
}

func TestCancelStopsTheQueryOnTheServer(t *testing.T) {
	t.Parallel()
	db := dbtest.NewMariaDB(t)
	tg := db.Target(db.Reader)
	tg.Limits.StatementTimeout = 120 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, driver(t), tg, "SELECT SLEEP(90) AS marker_"+db.Database)
		done <- err
	}()
	admin, err := sql.Open("mysql", dbtest.MariaDBAdminDSN)
	require.NoError(t, err)
	defer admin.Close()
	running := func() int {
		var n int
		require.NoError(t, admin.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE COMMAND = 'Query' AND INFO LIKE CONCAT('%marker_', ?, '%') AND ID <> CONNECTION_ID()`, db.Database).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return running() == 1 }, 30*time.Second, 20*time.Millisecond, "the query starts")
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return running() == 0 }, 30*time.Second, 20*time.Millisecond, "the server stopped the statement")
}

func TestAnswersAreTypedAndStable(t *testing.T) {
	t.Parallel()
	db := dbtest.NewMariaDB(t)
	a, err := run(context.Background(), driver(t), db.Target(db.Reader), "SELECT * FROM accounts ORDER BY id")
	require.NoError(t, err)
	types := map[string]string{}
	for _, c := range a.Columns {
		types[c.Name] = c.Type
	}
	require.Equal(t, "DECIMAL", types["balance"])
	require.Equal(t, "UNSIGNED BIGINT", types["ubig"])
	got, err := json.Marshal(a.Rows)
	require.NoError(t, err)
	require.JSONEq(t, `[
		[1, "ada", "1234.50", "9007199254740993", "2024-02-29", "2024-03-01T12:00:00.123456Z", "2024-03-01T12:00:00.000000", "AP8Q",
		 "{\"tier\": \"gold\"}", 1, 0.25, "18446744073709551615"],
		[2, "bob", "-0.01", 2, null, null, null, null, null, null, null, null]]`, string(got))
}

func TestCapsAndDescribe(t *testing.T) {
	t.Parallel()
	db := dbtest.NewMariaDB(t)
	d := driver(t)
	tg := db.Target(db.Reader)
	tg.Limits.MaxRows = 10
	a, err := run(context.Background(), d, tg,
		"WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 100000000) SELECT n FROM r")
	require.NoError(t, err)
	require.True(t, a.Truncated)
	require.Equal(t, dbsources.CapRows, a.Cap)
	require.Len(t, a.Rows, 10)

	tg = db.Target(db.Reader)
	sc, err := d.Describe(context.Background(), tg, 100)
	require.NoError(t, err)
	require.Len(t, sc.Tables, 2)
	tg.Scope = dbsources.Scope{Tables: []string{db.Database + ".salaries"}}
	sc, err = d.Describe(context.Background(), tg, 100)
	require.NoError(t, err)
	require.Len(t, sc.Tables, 1)
	require.Equal(t, []dbsources.TableColumn{{Name: "who", Type: "varchar(40)", Nullable: true}, {Name: "amount", Type: "int(11)", Nullable: true}},
		sc.Tables[0].Columns)

	plan, err := d.Explain(context.Background(), db.Target(db.Reader), "SELECT * FROM accounts WHERE id = 1")
	require.NoError(t, err)
	b, _ := json.Marshal(plan.Rows)
	require.Contains(t, string(b), `"table_name":"accounts"`)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	db := dbtest.NewMariaDB(t)
	ctx := context.Background()
	require.NoError(t, driver(t).Check(ctx, db.Target(db.Reader)))
	err := driver(t).Check(ctx, db.Target(dbtest.Role{User: "root"}))
	require.ErrorContains(t, err, "every privilege")
	err = mysql.New(dbsource.Allow{}).Check(ctx, db.Target(db.Reader))
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	wrong := db.Target(db.Reader)
	wrong.Password = "wrong"
	err = driver(t).Check(ctx, wrong)
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	require.ErrorContains(t, err, "Access denied")
}
