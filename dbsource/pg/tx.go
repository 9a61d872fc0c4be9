package pg

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

// readOnly runs fn on a connection inside a read-only transaction whose
// statements the server stops after the target's timeout, and rolls it
// back. A connection whose statement failed or was cancelled is closed
// rather than reused.
func (d *Driver) readOnly(ctx context.Context, t dbsources.Target, fn func(*pgx.Conn) error) (err error) {
	p, err := d.pool(t)
	if err != nil {
		return err
	}
	c, err := p.Acquire(ctx)
	if err != nil {
		return unreachable(t, err)
	}
	defer release(c, &err)
	ms := strconv.FormatInt(t.Limits.StatementTimeout.Milliseconds(), 10)
	// One round trip: the simple protocol runs them all, and the session's
	// own settings are never changed (SET LOCAL ends with the
	// transaction). The closing SELECT takes the transaction's snapshot,
	// after which its read-only mode can no longer be changed (SET
	// TRANSACTION READ WRITE fails).
	if _, err = c.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL statement_timeout = "+ms+
		"; SET LOCAL lock_timeout = "+ms+"; SET LOCAL idle_in_transaction_session_timeout = "+ms+"; SELECT 1",
		pgx.QueryExecModeSimpleProtocol); err != nil {
		return mapErr(ctx, t, err)
	}
	if err = fn(c.Conn()); errors.Is(err, errCut) {
		return err
	} else if err != nil {
		return mapErr(ctx, t, err)
	}
	if _, err = c.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); err != nil {
		return mapErr(ctx, t, err)
	}
	return nil
}

func release(c *pgxpool.Conn, err *error) {
	if *err != nil {
		// Closing discards the connection with whatever state the failure
		// left (an open transaction, a statement being cancelled).
		_ = c.Conn().Close(context.Background())
	}
	c.Release()
}

func unreachable(t dbsources.Target, err error) error {
	if fault.CodeOf(err) == fault.Forbidden { // the outbound guard refused the address
		return fault.Newf(fault.Forbidden, err, "%s", fault.Message(err))
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fault.Newf(fault.Unavailable, err, "%s:%d refused the connection: %s", t.Endpoint.Host, t.Endpoint.Port, pe.Message)
	}
	return fault.Newf(fault.Unavailable, err, "cannot connect to %s:%d", t.Endpoint.Host, t.Endpoint.Port)
}

// mapErr turns the database's answer into a fault the caller can read.
func mapErr(ctx context.Context, t dbsources.Target, err error) error {
	if ctx.Err() != nil {
		return fault.Newf(fault.Unavailable, err, "the query was cancelled")
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		if fault.CodeOf(err) != fault.Internal {
			return err
		}
		return unreachable(t, err)
	}
	switch {
	case pe.Code == "57014":
		return fault.Newf(fault.Invalid, err, "the query ran past the source's statement timeout of %s and was stopped by the database", t.Limits.StatementTimeout)
	case pe.Code == "25006":
		return fault.Newf(fault.Forbidden, err, "the database refused it: %s (queries run in a read-only transaction)", pe.Message)
	case pe.Code == "42501":
		return fault.Newf(fault.Forbidden, err, "the database refused it: %s", pe.Message)
	case pe.Code == "55P03":
		return fault.Newf(fault.Invalid, err, "the query waited too long for a lock: %s", pe.Message)
	}
	return fault.Newf(fault.Invalid, err, "the database answered: %s", pe.Message)
}
