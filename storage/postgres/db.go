// Package postgres implements Visor's storage interfaces on PostgreSQL with
// pgx. Every tenant-owned query names its tenant in the WHERE clause; a row
// of another tenant is indistinguishable from a missing one.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/visorhq/visor/services/fault"
)

// DB is a connection pool with Visor's helpers.
type DB struct {
	Pool *pgxpool.Pool
}

// Open connects to url and checks the connection. Errors say what is wrong
// in one line, without the password.
func Open(ctx context.Context, url string, opts ...func(*pgxpool.Config)) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse Postgres URL: %s", redactParseError(err))
	}
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open Postgres pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres at %s:%d/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return &DB{Pool: pool}, nil
}

// Close closes the pool.
func (db *DB) Close() { db.Pool.Close() }

// Querier is what both a pool and a transaction offer.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// InTx runs fn in a transaction, committing when fn returns nil and rolling
// back otherwise.
func (db *DB) InTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.Pool, fn)
}

// mapErr turns driver errors into fault codes: no rows is NotFound, a unique
// violation Conflict, a check violation Invalid. what names the thing for
// the caller ("agent", "member").
func mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Newf(fault.NotFound, err, "%s not found", what)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505":
			return fault.Newf(fault.Conflict, err, "%s already exists", what)
		case "23514", "22P02", "23503":
			return fault.Newf(fault.Invalid, err, "%s is not valid", what)
		}
	}
	return err
}

// redactParseError drops the URL (which may hold a password) from pgx's
// parse errors.
func redactParseError(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return "the URL is malformed (want postgres://user@host:port/db)"
	}
	return err.Error()
}
