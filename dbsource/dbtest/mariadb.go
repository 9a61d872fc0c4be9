package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// MariaDBAdminDSN is the administrator's DSN used when
// VISOR_TEST_MYSQL_DSN is unset.
const MariaDBAdminDSN = "root@tcp(127.0.0.1:3306)/"

var myFixture = []string{
	`CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(40) NOT NULL, balance DECIMAL(12,2), big BIGINT, opened DATE,
		updated TIMESTAMP(6) NULL, local DATETIME(6), photo VARBINARY(16), meta JSON, ok BOOLEAN, ratio DOUBLE, ubig BIGINT UNSIGNED)`,
	`INSERT INTO accounts VALUES
		(1, 'ada', 1234.50, 9007199254740993, '2024-02-29', '2024-03-01 12:00:00.123456', '2024-03-01 12:00:00', X'00ff10', '{"tier": "gold"}', TRUE, 0.25, 18446744073709551615),
		(2, 'bob', -0.01, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	`CREATE TABLE salaries (who VARCHAR(40), amount INT)`,
	`INSERT INTO salaries VALUES ('ada', 100)`,
	`CREATE FUNCTION bump() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE accounts SET balance = balance + 1; RETURN 1; END`,
	`CREATE PROCEDURE wipe() MODIFIES SQL DATA DELETE FROM accounts`,
}

// NewMariaDB creates a tenant database on the test MariaDB (or MySQL)
// server.
func NewMariaDB(t testing.TB) *DB {
	t.Helper()
	dsn := os.Getenv("VISOR_TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = MariaDBAdminDSN
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("VISOR_TEST_MYSQL_DSN: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	admin, err := sql.Open("mysql", dsn)
	if err == nil {
		err = admin.PingContext(ctx)
	}
	if err != nil {
		pgtest.Unavailable(t, "MariaDB", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	suffix := randHex(6)
	host, port := splitAddr(cfg.Addr)
	d := &DB{Kind: dbsources.MySQL, Host: host, Port: port, Database: "tenantdb_" + suffix,
		Reader: Role{"tro_" + suffix, "ro-" + suffix}, Writer: Role{"trw_" + suffix, "rw-" + suffix}}
	d.Exec = func(t testing.TB, stmts ...string) {
		t.Helper()
		c, err := admin.Conn(context.Background())
		if err != nil {
			t.Fatalf("connect to MariaDB: %v", err)
		}
		defer c.Close()
		if _, err := c.ExecContext(context.Background(), "USE "+d.Database); err != nil {
			t.Fatalf("use %s: %v", d.Database, err)
		}
		for _, s := range stmts {
			if _, err := c.ExecContext(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	for _, s := range []string{
		"CREATE DATABASE " + d.Database,
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", d.Reader.User, d.Reader.Password),
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", d.Writer.User, d.Writer.Password),
		fmt.Sprintf("GRANT SELECT ON %s.* TO '%s'@'%%'", d.Database, d.Reader.User),
		fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'%%'", d.Database, d.Writer.User),
	} {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		for _, s := range []string{"DROP DATABASE IF EXISTS " + d.Database, "DROP USER IF EXISTS '" + d.Reader.User + "'@'%'",
			"DROP USER IF EXISTS '" + d.Writer.User + "'@'%'"} {
			_, _ = admin.ExecContext(context.Background(), s)
		}
	})
	d.Exec(t, myFixture...)
	d.Checksum = func(t testing.TB) string {
		t.Helper()
		var sum string
		err := admin.QueryRowContext(context.Background(), fmt.Sprintf(`SELECT CONCAT_WS(' ',
			(SELECT MD5(GROUP_CONCAT(CONCAT_WS(',', id, owner, balance, big, opened, updated, local, HEX(photo), meta, ok, ratio, ubig) ORDER BY id SEPARATOR '|')) FROM %[1]s.accounts),
			(SELECT MD5(GROUP_CONCAT(CONCAT_WS(',', who, amount) ORDER BY who)) FROM %[1]s.salaries),
			(SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s'))`, d.Database)).Scan(&sum)
		if err != nil {
			t.Fatalf("checksum: %v", err)
		}
		return sum
	}
	return d
}

func splitAddr(addr string) (string, int) {
	host, p, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		return "127.0.0.1", 3306
	}
	return host, port
}
