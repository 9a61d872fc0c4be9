package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

const clientCols = `tenant_id, id, kind, name, client_uri, coalesce(secret_hash, ''), redirect_uris, grant_types, scopes,
	token_endpoint_auth_method, created_at, fetched_at`

func scanClient(row pgx.Row) (credentials.Client, error) {
	var c credentials.Client
	err := row.Scan(&c.TenantID, &c.ID, &c.Kind, &c.Name, &c.ClientURI, &c.SecretHash, &c.RedirectURIs, &c.GrantTypes,
		&c.Scopes, &c.AuthMethod, &c.CreatedAt, &c.FetchedAt)
	return c, err
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CreateClient inserts c; an id already used in the tenant is fault.Conflict.
func (s *CredentialStore) CreateClient(ctx context.Context, c *credentials.Client) error {
	err := s.q(ctx).QueryRow(ctx, `INSERT INTO oauth_clients (tenant_id, id, kind, name, client_uri, secret_hash,
		redirect_uris, grant_types, scopes, token_endpoint_auth_method, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING created_at`,
		c.TenantID, c.ID, c.Kind, c.Name, c.ClientURI, nullString(c.SecretHash), c.RedirectURIs, c.GrantTypes, c.Scopes,
		c.AuthMethod, c.FetchedAt).Scan(&c.CreatedAt)
	return mapErr(err, "client")
}

// PutMetadataClient inserts a metadata-document client or refreshes the
// cached copy. An id held by a client of another kind is fault.Conflict.
func (s *CredentialStore) PutMetadataClient(ctx context.Context, c *credentials.Client) error {
	err := s.q(ctx).QueryRow(ctx, `INSERT INTO oauth_clients (tenant_id, id, kind, name, client_uri, secret_hash,
		redirect_uris, grant_types, scopes, token_endpoint_auth_method, fetched_at)
		VALUES ($1, $2, 'metadata_document', $3, $4, NULL, $5, $6, $7, 'none', $8)
		ON CONFLICT (tenant_id, id) DO UPDATE SET name = $3, client_uri = $4, redirect_uris = $5, grant_types = $6,
			scopes = $7, fetched_at = $8 WHERE oauth_clients.kind = 'metadata_document'
		RETURNING created_at`,
		c.TenantID, c.ID, c.Name, c.ClientURI, c.RedirectURIs, c.GrantTypes, c.Scopes, c.FetchedAt).Scan(&c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.New(fault.Conflict, "client id %q belongs to a registered client", c.ID)
	}
	return mapErr(err, "client")
}

// Client returns the tenant's client with id.
func (s *CredentialStore) Client(ctx context.Context, tenantID uuid.UUID, id string) (credentials.Client, error) {
	c, err := scanClient(s.q(ctx).QueryRow(ctx, `SELECT `+clientCols+` FROM oauth_clients WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return c, mapErr(err, "client")
}

// ListClients returns the tenant's clients, oldest first.
func (s *CredentialStore) ListClients(ctx context.Context, tenantID uuid.UUID) ([]credentials.Client, error) {
	rows, err := s.q(ctx).Query(ctx, `SELECT `+clientCols+` FROM oauth_clients WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (credentials.Client, error) { return scanClient(r) })
}

// DeleteClient deletes the tenant's client; its tokens and consents go
// with it.
func (s *CredentialStore) DeleteClient(ctx context.Context, tenantID uuid.UUID, id string) error {
	tag, err := s.q(ctx).Exec(ctx, `DELETE FROM oauth_clients WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return err
	}
	return notFoundIfNone(tag.RowsAffected(), "client")
}

// CountClientsSince counts the tenant's clients of kind created after since.
func (s *CredentialStore) CountClientsSince(ctx context.Context, tenantID uuid.UUID, kind credentials.ClientKind, since time.Time) (int, error) {
	var n int
	err := s.q(ctx).QueryRow(ctx, `SELECT count(*) FROM oauth_clients WHERE tenant_id = $1 AND kind = $2 AND created_at > $3`,
		tenantID, kind, since).Scan(&n)
	return n, err
}
