package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// UpstreamStore implements upstreams.Store.
type UpstreamStore struct{ db *DB }

// NewUpstreamStore returns an UpstreamStore on db.
func NewUpstreamStore(db *DB) *UpstreamStore { return &UpstreamStore{db: db} }

var _ upstreams.Store = (*UpstreamStore)(nil)

// serverCols reads a server with its tool count and secret names.
const serverCols = `s.id, s.tenant_id, s.name, s.transport, s.url, s.image, s.command, s.allow_hosts, s.auth, s.enabled,
	s.timeout_ms, s.max_concurrent, s.max_result_bytes, s.description, s.version, s.refreshed_at, s.last_error,
	s.created_by, s.created_at, s.updated_at,
	(SELECT count(*) FROM mcp_server_tools t WHERE t.tenant_id = s.tenant_id AND t.server_id = s.id),
	COALESCE((SELECT jsonb_agg(jsonb_build_object('kind', x.kind, 'name', x.name, 'set', true) ORDER BY x.kind, x.name)
		FROM mcp_server_secrets x WHERE x.tenant_id = s.tenant_id AND x.server_id = s.id), '[]'::jsonb)`

func scanServer(row pgx.Row) (upstreams.Server, error) {
	var s upstreams.Server
	var timeoutMS int64
	var auth, secrets []byte
	err := row.Scan(&s.ID, &s.TenantID, &s.Name, &s.Transport, &s.URL, &s.Image, &s.Command, &s.AllowHosts, &auth, &s.Enabled,
		&timeoutMS, &s.Limits.MaxConcurrent, &s.Limits.MaxResultBytes, &s.Description, &s.Version, &s.RefreshedAt, &s.LastError,
		&s.CreatedBy, &s.CreatedAt, &s.UpdatedAt, &s.ToolCount, &secrets)
	if err != nil {
		return s, err
	}
	s.Limits.Timeout = time.Duration(timeoutMS) * time.Millisecond
	if err := json.Unmarshal(auth, &s.Auth); err != nil {
		return s, err
	}
	return s, json.Unmarshal(secrets, &s.Secrets)
}

// Create inserts s unless the tenant already holds max servers.
func (st *UpstreamStore) Create(ctx context.Context, s *upstreams.Server, max int) error {
	auth, err := json.Marshal(s.Auth)
	if err != nil {
		return err
	}
	return st.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE`, s.TenantID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM mcp_servers WHERE tenant_id = $1`, s.TenantID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return fault.New(fault.Conflict, "the tenant holds %d upstream servers already", max)
		}
		err := tx.QueryRow(ctx, `INSERT INTO mcp_servers (tenant_id, id, name, transport, url, image, command, allow_hosts, auth,
			enabled, timeout_ms, max_concurrent, max_result_bytes, description, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING version, created_at, updated_at`,
			s.TenantID, s.ID, s.Name, s.Transport, s.URL, s.Image, s.Command, s.AllowHosts, auth, s.Enabled,
			s.Limits.Timeout.Milliseconds(), s.Limits.MaxConcurrent, s.Limits.MaxResultBytes, s.Description, s.CreatedBy,
		).Scan(&s.Version, &s.CreatedAt, &s.UpdatedAt)
		return mapErr(err, "upstream server "+s.Name)
	})
}

// Server returns the tenant's server with id.
func (st *UpstreamStore) Server(ctx context.Context, tenantID, id uuid.UUID) (upstreams.Server, error) {
	s, err := scanServer(st.db.Pool.QueryRow(ctx, `SELECT `+serverCols+` FROM mcp_servers s WHERE s.tenant_id = $1 AND s.id = $2`, tenantID, id))
	return s, mapErr(err, "upstream server")
}

// ServerByName returns the tenant's server named name.
func (st *UpstreamStore) ServerByName(ctx context.Context, tenantID uuid.UUID, name string) (upstreams.Server, error) {
	s, err := scanServer(st.db.Pool.QueryRow(ctx, `SELECT `+serverCols+` FROM mcp_servers s WHERE s.tenant_id = $1 AND s.name = $2`, tenantID, name))
	return s, mapErr(err, "upstream server "+name)
}

// List returns the tenant's servers by name.
func (st *UpstreamStore) List(ctx context.Context, tenantID uuid.UUID) ([]upstreams.Server, error) {
	rows, err := st.db.Pool.Query(ctx, `SELECT `+serverCols+` FROM mcp_servers s WHERE s.tenant_id = $1 ORDER BY s.name`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (upstreams.Server, error) { return scanServer(r) })
}

// Update applies fn to the tenant's server under a row lock, bumps its
// version and saves it.
func (st *UpstreamStore) Update(ctx context.Context, tenantID, id uuid.UUID, fn func(*upstreams.Server) error) (s upstreams.Server, err error) {
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		s, err = scanServer(tx.QueryRow(ctx, `SELECT `+serverCols+` FROM mcp_servers s WHERE s.tenant_id = $1 AND s.id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return mapErr(err, "upstream server")
		}
		if err := fn(&s); err != nil {
			return err
		}
		auth, err := json.Marshal(s.Auth)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE mcp_servers SET transport = $3, url = $4, image = $5, command = $6, allow_hosts = $7, auth = $8,
			enabled = $9, timeout_ms = $10, max_concurrent = $11, max_result_bytes = $12, description = $13,
			version = version + 1, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING version, updated_at`,
			tenantID, id, s.Transport, s.URL, s.Image, s.Command, s.AllowHosts, auth, s.Enabled, s.Limits.Timeout.Milliseconds(),
			s.Limits.MaxConcurrent, s.Limits.MaxResultBytes, s.Description).Scan(&s.Version, &s.UpdatedAt)
		return mapErr(err, "upstream server")
	})
	return s, err
}

// Delete removes the tenant's server, its secrets, tools and tokens (by
// cascade), returning the server and the tokens it held.
func (st *UpstreamStore) Delete(ctx context.Context, tenantID, id uuid.UUID) (s upstreams.Server, tokens []upstreams.Token, err error) {
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		s, err = scanServer(tx.QueryRow(ctx, `SELECT `+serverCols+` FROM mcp_servers s WHERE s.tenant_id = $1 AND s.id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return mapErr(err, "upstream server")
		}
		rows, err := tx.Query(ctx, `SELECT `+tokenCols+` FROM mcp_server_tokens WHERE tenant_id = $1 AND server_id = $2`, tenantID, id)
		if err != nil {
			return err
		}
		if tokens, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (upstreams.Token, error) { return scanToken(r) }); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM mcp_servers WHERE tenant_id = $1 AND id = $2`, tenantID, id)
		return err
	})
	return s, tokens, err
}

// bumpServer raises a server's version (its secrets changed) and reports
// NotFound when the tenant has no such server.
func bumpServer(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) error {
	tag, err := tx.Exec(ctx, `UPDATE mcp_servers SET version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "upstream server not found")
	}
	return err
}
