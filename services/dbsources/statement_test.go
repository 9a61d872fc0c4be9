package dbsources_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

func TestCheckStatement(t *testing.T) {
	t.Parallel()
	pg, my := dbsources.Postgres, dbsources.MySQL
	for _, tc := range []struct {
		kind dbsources.Kind
		sql  string
		want string // "" when accepted
	}{
		{pg, "SELECT 1", ""},
		{pg, "  select * from t;  ", ""},
		{pg, "WITH x AS (SELECT 1) SELECT * FROM x", ""},
		{pg, "VALUES (1), (2)", ""},
		{pg, "TABLE accounts", ""},
		{pg, "SELECT 'a;b', \"into\", $$ ; DELETE $$, $tag$ ; $tag$ FROM t", ""},
		{pg, "SELECT 1 /* ; /* nested ; */ still */", ""},
		{pg, "SELECT E'\\'; DELETE FROM t'", ""},
		{pg, "SELECT 1 -- ; DELETE", ""},
		{pg, "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", ""}, // the read-only transaction refuses it
		{pg, "SELECT 1; SELECT 2", "exactly one statement"},
		{pg, "SELECT 1;;", "exactly one statement"},
		{pg, "SELECT 'x'; DELETE FROM t", "exactly one statement"},
		{pg, "SELECT 1 /* x */; DELETE FROM t", "exactly one statement"},
		{pg, "", "empty"},
		{pg, " ; ", "empty"},
		{pg, "-- only a comment", "empty"},
		{pg, "INSERT INTO t VALUES (1)", "must start with SELECT"},
		{pg, "COPY t TO STDOUT", "must start with SELECT"},
		{pg, "SET statement_timeout = 0", "must start with SELECT"},
		{pg, "BEGIN", "must start with SELECT"},
		{pg, "EXPLAIN ANALYZE DELETE FROM t", "must start with SELECT"},
		{pg, "SELECT * INTO new FROM t", "INTO"},
		{pg, "SELECT * FROM t FOR UPDATE", "locking reads"},
		{pg, "SELECT * FROM t FOR NO KEY UPDATE", "locking reads"},
		{pg, "SELECT * FROM t FOR SHARE", "locking reads"},
		{pg, "SELECT set_config('x', 'y', false)", "set_config"},
		{pg, "SELECT SET_CONFIG ('x', 'y', false)", "set_config"},
		{pg, "SELECT pg_advisory_lock(1)", "advisory"},
		{pg, "SELECT 'unterminated", "unterminated"},
		{pg, "SELECT $a$ unterminated", "unterminated"},
		{pg, "SELECT /* unterminated", "unterminated"},
		{pg, "SELECT \"unterminated", "unterminated"},
		{pg, "SELECT 'it''s'", ""},
		{pg, "(SELECT 1) UNION (SELECT 2)", ""},
		{pg, "(DELETE FROM t)", "must start with SELECT"},
		{my, "SELECT 'it\\'s; DELETE' FROM t", ""},
		{my, "SELECT \"a;b\", `weird;name` FROM t", ""},
		{my, "SELECT 1 # ; DELETE", ""},
		{my, "SELECT 1 INTO OUTFILE '/tmp/x'", "INTO"},
		{my, "SELECT 1 INTO @v", "INTO"},
		{my, "SELECT @v := 1", ":="},
		{my, "SELECT * FROM t LOCK IN SHARE MODE", "locking reads"},
		{my, "SELECT GET_LOCK('a', 1)", "named locks"},
		{my, "SELECT LOAD_FILE('/etc/passwd')", "file access"},
		{my, "/*! DELETE FROM t */ SELECT 1", "executable comments"},
		{my, "LOAD DATA INFILE 'x' INTO TABLE t", "must start with SELECT"},
		{my, "SELECT 1; DELETE FROM t", "exactly one statement"},
		{my, "SELECT $$;$$", "exactly one statement"}, // no dollar quotes in MySQL
	} {
		err := dbsources.CheckStatement(tc.kind, tc.sql)
		if tc.want == "" {
			require.NoError(t, err, "%s: %s", tc.kind, tc.sql)
			continue
		}
		require.Error(t, err, "%s: %s", tc.kind, tc.sql)
		require.True(t, fault.Is(err, fault.Invalid), "%s: %v", tc.sql, err)
		require.Contains(t, err.Error(), tc.want, tc.sql)
	}
	require.ErrorContains(t, dbsources.CheckStatement(pg, "SELECT '"+strings.Repeat("x", dbsources.MaxStatement)+"'"), "longer than")
}

// FuzzCheckStatement: whatever the text, the rules answer with nil or a
// fault.Invalid, never a panic; and an accepted text never holds a second
// statement after a ';' outside comments, strings and quoted names.
func FuzzCheckStatement(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT ';'; DELETE", "SELECT $a$;$a$", "/* /* */ */ SELECT 1", "SELECT E'\\';'",
		"SELECT `a;b`", "SELECT 1 # x\n; DELETE", "WITH x AS (SELECT 1) SELECT * FROM x FOR UPDATE"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, sql string, mysql bool) {
		k := dbsources.Postgres
		if mysql {
			k = dbsources.MySQL
		}
		if err := dbsources.CheckStatement(k, sql); err != nil && !fault.Is(err, fault.Invalid) {
			t.Fatalf("%q: not a fault.Invalid: %v", sql, err)
		}
	})
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	k, e, pw, err := dbsources.ParseURL("postgres://ro:s3cr%40t@DB.internal/sales?sslmode=require")
	require.NoError(t, err)
	require.Equal(t, dbsources.Postgres, k)
	require.Equal(t, dbsources.Endpoint{Host: "db.internal", Port: 5432, Database: "sales", User: "ro", SSLMode: "require"}, e)
	require.Equal(t, "s3cr@t", pw)
	require.Equal(t, "postgres://ro@db.internal:5432/sales?sslmode=require", e.String(k), "the connection string without its password")
	k, e, _, err = dbsources.ParseURL("mariadb://ro@10.0.0.5:3307/shop")
	require.NoError(t, err)
	require.Equal(t, dbsources.MySQL, k)
	require.Equal(t, 3307, e.Port)
	require.Equal(t, "prefer", e.SSLMode)
	for raw, want := range map[string]string{
		"http://ro:pw@h/db":                       "scheme",
		"postgres://ro:pw@/db":                    "one host",
		"postgres://ro:pw@h1,h2/db":               "one host",
		"postgres://ro:pw@%2Ftmp/db":              "connection string",
		"postgres://ro:pw@h:99999/db":             "port",
		"postgres://ro:pw@h/":                     "database",
		"postgres://h/db":                         "user name",
		"postgres://ro:pw@h/db?host=/tmp":         "sslmode",
		"postgres://ro:pw@h/db?sslmode=allow":     "sslmode",
		"mysql://ro:pw@h/db?allowAllFiles=true":   "sslmode",
		"postgres://ro:pw@h/db?sslmode=require#x": "fragment",
	} {
		_, _, _, err := dbsources.ParseURL(raw)
		require.ErrorContains(t, err, want, raw)
		require.NotContains(t, err.Error(), "pw@", "an error never echoes the string")
	}
}

func TestLimitsDefaultsAndBounds(t *testing.T) {
	t.Parallel()
	var l dbsources.Limits
	require.NoError(t, l.Check())
	require.Equal(t, dbsources.DefaultLimits, l)
	for _, bad := range []dbsources.Limits{{MaxRows: 10001}, {MaxBytes: 10}, {MaxConcurrent: 33}, {StatementTimeout: 301e9}, {MaxRows: -1}} {
		require.Error(t, bad.Check(), "%+v", bad)
	}
}
