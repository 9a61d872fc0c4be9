// Package mysql is the MySQL and MariaDB driver of database sources
// (services/dbsources.Driver): a pool per source, every connection through
// the outbound guard, every statement in START TRANSACTION READ ONLY with
// the source's statement timeout set on the server (max_statement_time on
// MariaDB, max_execution_time on MySQL), and a caller's cancel sent to the
// server as KILL QUERY.
package mysql

import (
	"database/sql"
	"database/sql/driver"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

// Driver implements dbsources.Driver for MySQL and MariaDB.
type Driver struct {
	allow dbsource.Allow
	mu    sync.Mutex
	dbs   map[string]*pool
}

// pool is one source's connections and what is known of each: its
// server-side id (for KILL QUERY), once its session is set up.
type pool struct {
	db      *sql.DB
	mu      sync.Mutex
	session map[driver.Conn]int64
}

var _ dbsources.Driver = (*Driver)(nil)

// New returns a Driver whose connections may reach the private
// destinations allow names, and public addresses.
func New(allow dbsource.Allow) *Driver { return &Driver{allow: allow, dbs: map[string]*pool{}} }

// Close closes every pool.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, p := range d.dbs {
		_ = p.db.Close()
		delete(d.dbs, k)
	}
}

// Forget closes the pool of key.
func (d *Driver) Forget(key string) {
	d.mu.Lock()
	p := d.dbs[key]
	delete(d.dbs, key)
	d.mu.Unlock()
	if p != nil {
		_ = p.db.Close()
	}
}

var tlsModes = map[string]string{"disable": "false", "prefer": "preferred", "require": "skip-verify", "verify-full": "true"}

func (d *Driver) pool(t dbsources.Target) (*pool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.dbs[t.Key]; ok {
		return p, nil
	}
	e := t.Endpoint
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.DBName = e.User, t.Password, "tcp", e.Database
	cfg.Addr = e.Host + ":" + strconv.Itoa(e.Port)
	cfg.DialFunc = d.allow.Dialer(e.Host)
	cfg.TLSConfig = tlsModes[e.SSLMode]
	cfg.Timeout, cfg.Loc = 10*time.Second, time.UTC
	// Never: files from this host, several statements in one text,
	// arguments spliced into text.
	cfg.AllowAllFiles, cfg.MultiStatements, cfg.InterpolateParams = false, false, false
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fault.New(fault.Invalid, "the connection settings are not valid for MySQL")
	}
	p := &pool{db: sql.OpenDB(conn), session: map[driver.Conn]int64{}}
	p.db.SetMaxOpenConns(t.Limits.MaxConcurrent + 1)
	p.db.SetConnMaxIdleTime(time.Minute)
	d.dbs[t.Key] = p
	return p, nil
}
