// Package pg is the Postgres driver of database sources
// (services/dbsources.Driver): a pool per source, every connection
// through the outbound guard, every statement in a read-only transaction
// with the source's statement timeout set on the server, and a caller's
// cancel sent to the server as a cancel request.
package pg

import (
	"context"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

// Driver implements dbsources.Driver for Postgres.
type Driver struct {
	allow dbsource.Allow
	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
}

var _ dbsources.Driver = (*Driver)(nil)

// New returns a Driver whose connections may reach the private
// destinations allow names, and public addresses.
func New(allow dbsource.Allow) *Driver {
	return &Driver{allow: allow, pools: map[string]*pgxpool.Pool{}}
}

// Close closes every pool.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, p := range d.pools {
		p.Close()
		delete(d.pools, k)
	}
}

// Forget closes the pool of key, once its connections are back.
func (d *Driver) Forget(key string) {
	d.mu.Lock()
	p := d.pools[key]
	delete(d.pools, key)
	d.mu.Unlock()
	if p != nil {
		go p.Close()
	}
}

func (d *Driver) pool(t dbsources.Target) (*pgxpool.Pool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.pools[t.Key]; ok {
		return p, nil
	}
	cfg, err := d.config(t)
	if err != nil {
		return nil, err
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fault.Newf(fault.Unavailable, err, "cannot open a pool to %s", t.Endpoint.Host)
	}
	d.pools[t.Key] = p
	return p, nil
}

func (d *Driver) config(t dbsources.Target) (*pgxpool.Config, error) {
	e := t.Endpoint
	u := url.URL{Scheme: "postgres", User: url.UserPassword(e.User, t.Password), Host: e.Host + ":" + strconv.Itoa(e.Port),
		Path: "/" + e.Database, RawQuery: url.Values{"sslmode": {e.SSLMode}, "connect_timeout": {"10"}}.Encode()}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fault.New(fault.Invalid, "the connection settings are not valid for Postgres")
	}
	c := cfg.ConnConfig
	c.DialFunc = pgconn.DialFunc(d.allow.Dialer(e.Host))
	for _, fb := range c.Fallbacks {
		fb.Host = e.Host // a fallback (sslmode=prefer) dials the same host through the same guard
	}
	// One round trip per statement, no statement cache to go stale, and
	// the server refuses a second statement in the text.
	c.DefaultQueryExecMode = pgx.QueryExecModeExec
	c.RuntimeParams["application_name"] = "visor"
	c.RuntimeParams["default_transaction_read_only"] = "on"
	// Strings are read as the statement rules read them.
	c.RuntimeParams["standard_conforming_strings"] = "on"
	c.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 2 * time.Second}
	}
	cfg.MaxConns = int32(t.Limits.MaxConcurrent) + 1
	cfg.MaxConnIdleTime = time.Minute
	return cfg, nil
}
