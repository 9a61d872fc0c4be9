package postgres

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// SaveTools replaces the server's tools when version is still its version
// (a refresh that raced a change is dropped) and records the refresh.
func (st *UpstreamStore) SaveTools(ctx context.Context, tenantID, serverID uuid.UUID, version int64, list []upstreams.Tool, refreshErr string) error {
	return st.db.InTx(ctx, func(tx pgx.Tx) error {
		var current int64
		err := tx.QueryRow(ctx, `SELECT version FROM mcp_servers WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, serverID).Scan(&current)
		if err != nil {
			return mapErr(err, "upstream server")
		}
		if current != version {
			return nil
		}
		if refreshErr != "" {
			_, err := tx.Exec(ctx, `UPDATE mcp_servers SET last_error = $3, refreshed_at = now() WHERE tenant_id = $1 AND id = $2`,
				tenantID, serverID, refreshErr)
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mcp_server_tools WHERE tenant_id = $1 AND server_id = $2`, tenantID, serverID); err != nil {
			return err
		}
		rows := make([][]any, len(list))
		for i, t := range list {
			rows[i] = []any{tenantID, serverID, t.Name, t.Title, t.Description, []byte(t.InputSchema), nullJSON(t.OutputSchema), nullJSON(t.Annotations)}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"mcp_server_tools"},
			[]string{"tenant_id", "server_id", "name", "title", "description", "input_schema", "output_schema", "annotations"}, pgx.CopyFromRows(rows))
		if err != nil {
			return mapErr(err, "upstream tool")
		}
		_, err = tx.Exec(ctx, `UPDATE mcp_servers SET last_error = '', refreshed_at = now() WHERE tenant_id = $1 AND id = $2`, tenantID, serverID)
		return err
	})
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// Catalog returns the tool summaries of the tenant's enabled servers (of
// the one named server when server is not ""), by server and name.
func (st *UpstreamStore) Catalog(ctx context.Context, tenantID uuid.UUID, server string) ([]upstreams.Tool, error) {
	rows, err := st.db.Pool.Query(ctx, `SELECT s.name, t.name, t.title, t.description
		FROM mcp_server_tools t JOIN mcp_servers s ON s.tenant_id = t.tenant_id AND s.id = t.server_id
		WHERE t.tenant_id = $1 AND s.enabled AND ($2 = '' OR s.name = $2) ORDER BY s.name, t.name`, tenantID, server)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (upstreams.Tool, error) {
		var t upstreams.Tool
		return t, r.Scan(&t.Server, &t.Name, &t.Title, &t.Description)
	})
}

// Tool returns one tool with its schemas, and its server, in one round
// trip (every upstream call reads it): NotFound names the server when the
// tenant has none of that name, the tool when the server lists none.
func (st *UpstreamStore) Tool(ctx context.Context, tenantID uuid.UUID, server, tool string) (upstreams.Server, upstreams.Tool, error) {
	t := upstreams.Tool{Server: server}
	var name *string
	var in, out, ann []byte
	row := st.db.Pool.QueryRow(ctx, `SELECT `+serverCols+`, t.name, t.title, t.description, t.input_schema, t.output_schema, t.annotations
		FROM mcp_servers s LEFT JOIN mcp_server_tools t ON t.tenant_id = s.tenant_id AND t.server_id = s.id AND t.name = $3
		WHERE s.tenant_id = $1 AND s.name = $2`, tenantID, server, tool)
	var title, desc *string
	srv, err := scanServer(rowWith{row: row, extra: []any{&name, &title, &desc, &in, &out, &ann}})
	if err != nil {
		return srv, t, mapErr(err, "upstream server "+server)
	}
	if name == nil {
		return srv, t, fault.New(fault.NotFound, "upstream tool %s:%s not found", server, tool)
	}
	t.Name, t.Title, t.Description = *name, *title, *desc
	t.InputSchema, t.OutputSchema, t.Annotations = in, out, ann
	return srv, t, nil
}

// rowWith scans extra columns after the ones its caller scans.
type rowWith struct {
	row   pgx.Row
	extra []any
}

func (r rowWith) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra...)...) }

const tokenCols = `tenant_id, server_id, member_id, sealed_access, sealed_refresh, expires_at, scope`

func scanToken(row pgx.Row) (upstreams.Token, error) {
	var t upstreams.Token
	return t, row.Scan(&t.TenantID, &t.ServerID, &t.MemberID, &t.SealedAccess, &t.SealedRefresh, &t.ExpiresAt, &t.Scope)
}

// Token returns the token held for member (uuid.Nil: the tenant's).
func (st *UpstreamStore) Token(ctx context.Context, tenantID, serverID, memberID uuid.UUID) (upstreams.Token, error) {
	t, err := scanToken(st.db.Pool.QueryRow(ctx, `SELECT `+tokenCols+` FROM mcp_server_tokens WHERE tenant_id = $1 AND server_id = $2 AND member_id = $3`,
		tenantID, serverID, memberID))
	return t, mapErr(err, "upstream token")
}

// SaveToken inserts or replaces a token.
func (st *UpstreamStore) SaveToken(ctx context.Context, t upstreams.Token) error {
	tag, err := st.db.Pool.Exec(ctx, `INSERT INTO mcp_server_tokens (tenant_id, server_id, member_id, sealed_access, sealed_refresh, expires_at, scope)
		SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM mcp_servers WHERE tenant_id = $1 AND id = $2)
		ON CONFLICT (tenant_id, server_id, member_id) DO UPDATE SET sealed_access = EXCLUDED.sealed_access,
			sealed_refresh = EXCLUDED.sealed_refresh, expires_at = EXCLUDED.expires_at, scope = EXCLUDED.scope, updated_at = now()`,
		t.TenantID, t.ServerID, t.MemberID, t.SealedAccess, t.SealedRefresh, t.ExpiresAt, t.Scope)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "upstream server not found")
	}
	return mapErr(err, "upstream token")
}

// DeleteToken removes a token.
func (st *UpstreamStore) DeleteToken(ctx context.Context, tenantID, serverID, memberID uuid.UUID) error {
	tag, err := st.db.Pool.Exec(ctx, `DELETE FROM mcp_server_tokens WHERE tenant_id = $1 AND server_id = $2 AND member_id = $3`,
		tenantID, serverID, memberID)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "upstream token not found")
	}
	return err
}
