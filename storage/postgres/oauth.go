package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

// CredentialStore implements credentials.Store: OAuth clients, codes and
// tokens by signature, consents, member sessions and round tokens.
type CredentialStore struct{ db *DB }

var _ credentials.Store = (*CredentialStore)(nil)

// NewCredentialStore returns the credential store on db.
func NewCredentialStore(db *DB) *CredentialStore { return &CredentialStore{db: db} }

type txKey struct{}

// q returns the transaction carried by ctx, or the pool.
func (s *CredentialStore) q(ctx context.Context) Querier {
	if tx, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return tx
	}
	return s.db.Pool
}

// Begin starts a transaction carried by the returned context.
func (s *CredentialStore) Begin(ctx context.Context) (context.Context, error) {
	if _, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return ctx, errors.New("credential store: transaction already open")
	}
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, txKey{}, tx), nil
}

// Commit commits the transaction carried by ctx.
func (s *CredentialStore) Commit(ctx context.Context) error {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	if !ok {
		return errors.New("credential store: no transaction to commit")
	}
	return tx.Commit(ctx)
}

// Rollback rolls back the transaction carried by ctx.
func (s *CredentialStore) Rollback(ctx context.Context) error {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	if !ok {
		return errors.New("credential store: no transaction to roll back")
	}
	return tx.Rollback(context.WithoutCancel(ctx))
}

// ServerSecret returns the shared HMAC key for OAuth codes and tokens,
// creating it on first use so that every replica agrees.
func (s *CredentialStore) ServerSecret(ctx context.Context) ([]byte, error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	if _, err := s.db.Pool.Exec(ctx, `INSERT INTO oauth_server_secrets (id, secret) VALUES (1, $1) ON CONFLICT DO NOTHING`, b); err != nil {
		return nil, err
	}
	var secret []byte
	err := s.db.Pool.QueryRow(ctx, `SELECT secret FROM oauth_server_secrets WHERE id = 1`).Scan(&secret)
	return secret, err
}

// DeleteExpired removes codes, tokens, sessions and round tokens that
// expired before cutoff.
func (s *CredentialStore) DeleteExpired(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	for _, q := range []string{
		`DELETE FROM oauth_tokens WHERE expires_at < $1`,
		`DELETE FROM member_sessions WHERE expires_at < $1`,
		`DELETE FROM round_tokens WHERE expires_at < $1`,
		// Cached metadata documents nobody uses any more.
		`DELETE FROM oauth_clients c WHERE kind = 'metadata_document' AND fetched_at < $1::timestamptz - interval '1 day'
			AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.tenant_id = c.tenant_id AND t.client_id = c.id)
			AND NOT EXISTS (SELECT 1 FROM oauth_consents o WHERE o.tenant_id = c.tenant_id AND o.client_id = c.id)`,
	} {
		tag, err := s.q(ctx).Exec(ctx, q, cutoff)
		if err != nil {
			return n, err
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

// notFoundIfNone turns "no row changed" into fault.NotFound.
func notFoundIfNone(n int64, what string) error {
	if n == 0 {
		return fault.New(fault.NotFound, "%s not found", what)
	}
	return nil
}
