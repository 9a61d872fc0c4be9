package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

// readOnly runs fn on a connection inside START TRANSACTION READ ONLY and
// rolls it back. The statement timeout is set on the session once per
// connection (statements that could change it are refused before they are
// sent); a caller's cancel kills the running statement on the server, and
// a connection whose statement failed is closed rather than reused.
// fn's cut stops its statement on the server, for an answer a cap cut;
// fn then returns errCut.
func (d *Driver) readOnly(ctx context.Context, t dbsources.Target, fn func(c *sql.Conn, cut func()) error) (err error) {
	p, err := d.pool(t)
	if err != nil {
		return err
	}
	c, err := p.db.Conn(ctx)
	if err != nil {
		return mapErr(ctx, t, err)
	}
	defer func() {
		if err != nil {
			_ = c.Raw(func(dc any) error { p.forget(dc); return driver.ErrBadConn })
		}
		_ = c.Close()
	}()
	id, err := p.setup(ctx, c, t)
	if err != nil {
		return mapErr(ctx, t, err)
	}
	stop := context.AfterFunc(ctx, func() { p.kill(id) })
	defer stop()
	if _, err = c.ExecContext(ctx, "START TRANSACTION READ ONLY"); err != nil {
		return mapErr(ctx, t, err)
	}
	if err = fn(c, func() { p.kill(id) }); errors.Is(err, errCut) {
		return err
	} else if err != nil {
		return mapErr(ctx, t, err)
	}
	if _, err = c.ExecContext(ctx, "ROLLBACK"); err != nil {
		return mapErr(ctx, t, err)
	}
	return nil
}

// errCut ends a transaction whose answer a cap cut: not a failure, but its
// connection is not reused.
var errCut = errors.New("answer cut by a cap")

// setup returns the connection's server id, first setting its session up:
// the statement timeout, UTC for TIMESTAMP values, the sql_mode the
// statement rules assume.
func (p *pool) setup(ctx context.Context, c *sql.Conn, t dbsources.Target) (int64, error) {
	var key any
	_ = c.Raw(func(dc any) error { key = dc; return nil })
	p.mu.Lock()
	id, ok := p.session[key.(driver.Conn)]
	p.mu.Unlock()
	if ok {
		return id, nil
	}
	var version string
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID(), VERSION()").Scan(&id, &version); err != nil {
		return 0, err
	}
	timeout := fmt.Sprintf("SET SESSION max_execution_time = %d", t.Limits.StatementTimeout.Milliseconds())
	if strings.Contains(strings.ToLower(version), "mariadb") {
		timeout = fmt.Sprintf("SET SESSION max_statement_time = %.3f", t.Limits.StatementTimeout.Seconds())
	}
	// Strings are read with backslash escapes, as the statement rules read
	// them, whatever the server's default sql_mode.
	for _, s := range []string{timeout, "SET SESSION time_zone = '+00:00'",
		"SET SESSION sql_mode = REPLACE(REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', ''), 'ANSI_QUOTES', '')"} {
		if _, err := c.ExecContext(ctx, s); err != nil {
			return 0, err
		}
	}
	p.mu.Lock()
	p.session[key.(driver.Conn)] = id
	p.mu.Unlock()
	return id, nil
}

func (p *pool) forget(dc any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.session, dc.(driver.Conn))
}

// kill stops connection id's running statement, from another connection.
func (p *pool) kill(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = p.db.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id))
}

// mapErr turns the database's answer into a fault the caller can read.
func mapErr(ctx context.Context, t dbsources.Target, err error) error {
	if ctx.Err() != nil {
		return fault.Newf(fault.Unavailable, err, "the query was cancelled")
	}
	if fault.CodeOf(err) == fault.Forbidden { // the outbound guard refused the address
		return fault.Newf(fault.Forbidden, err, "%s", fault.Message(err))
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		if fault.CodeOf(err) != fault.Internal {
			return err
		}
		return fault.Newf(fault.Unavailable, err, "cannot connect to %s:%d", t.Endpoint.Host, t.Endpoint.Port)
	}
	switch me.Number {
	case 1969, 3024, 1317: // max_statement_time, max_execution_time exceeded; interrupted
		return fault.Newf(fault.Invalid, err, "the query ran past the source's statement timeout of %s and was stopped by the database", t.Limits.StatementTimeout)
	case 1792: // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
		return fault.Newf(fault.Forbidden, err, "the database refused it: %s (queries run in a read-only transaction)", me.Message)
	case 1044, 1045, 1142, 1143, 1227, 1370:
		return fault.Newf(fault.Forbidden, err, "the database refused it: %s", me.Message)
	}
	return fault.Newf(fault.Invalid, err, "the database answered: %s", me.Message)
}
