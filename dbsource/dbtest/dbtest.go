// Package dbtest gives tests a tenant's database to point a database
// source at: a fresh Postgres database or MariaDB schema with a few tables,
// a role that may only read and a role that owns (and may write) the
// tables, dropped when the test ends. Servers that cannot be reached skip
// the test, or fail it under VISOR_TEST_REQUIRE_SERVICES=1.
package dbtest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/visorhq/visor/services/dbsources"
)

// DB is one tenant database.
type DB struct {
	Kind     dbsources.Kind
	Host     string
	Port     int
	Database string
	// Reader may only read; Writer owns the tables.
	Reader, Writer Role
	// Checksum returns a digest of every row, sequence and table of the
	// database, to show that nothing changed.
	Checksum func(t testing.TB) string
	// Exec runs statements as the server's administrator.
	Exec func(t testing.TB, sql ...string)
}

// Role is a database account.
type Role struct{ User, Password string }

// Target returns a target for role with the default limits.
func (d *DB) Target(role Role) dbsources.Target {
	return dbsources.Target{Key: d.Database + "/" + role.User + "/" + randHex(4), Kind: d.Kind,
		Endpoint: dbsources.Endpoint{Host: d.Host, Port: d.Port, Database: d.Database, User: role.User, SSLMode: "disable"},
		Password: role.Password, Limits: dbsources.DefaultLimits}
}

// URL returns role's connection string for the source, password included.
func (d *DB) URL(role Role) string {
	u := url.URL{Scheme: string(d.Kind), User: url.UserPassword(role.User, role.Password),
		Host: d.Host + ":" + strconv.Itoa(d.Port), Path: "/" + d.Database, RawQuery: "sslmode=disable"}
	return u.String()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const setupTimeout = 30 * time.Second
