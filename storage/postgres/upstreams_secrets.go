package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// SetSecret inserts or replaces one sealed secret, at most max per server,
// and bumps the server's version.
func (st *UpstreamStore) SetSecret(ctx context.Context, tenantID, serverID uuid.UUID, sec upstreams.Secret, max int) error {
	return st.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := bumpServer(ctx, tx, tenantID, serverID); err != nil {
			return err
		}
		var n int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM mcp_server_secrets WHERE tenant_id = $1 AND server_id = $2
			AND NOT (kind = $3 AND name = $4)`, tenantID, serverID, sec.Kind, sec.Name).Scan(&n)
		if err != nil {
			return err
		}
		if n >= max {
			return fault.New(fault.Conflict, "the server holds %d secrets already", max)
		}
		_, err = tx.Exec(ctx, `INSERT INTO mcp_server_secrets (tenant_id, server_id, kind, name, sealed) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant_id, server_id, kind, name) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = now()`,
			tenantID, serverID, sec.Kind, sec.Name, sec.Sealed)
		return mapErr(err, "secret "+sec.Name)
	})
}

// DeleteSecret removes one secret and bumps the server's version.
func (st *UpstreamStore) DeleteSecret(ctx context.Context, tenantID, serverID uuid.UUID, kind upstreams.SecretKind, name string) error {
	return st.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM mcp_server_secrets WHERE tenant_id = $1 AND server_id = $2 AND kind = $3 AND name = $4`,
			tenantID, serverID, kind, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.New(fault.NotFound, "the server has no %s secret named %s", kind, name)
		}
		return bumpServer(ctx, tx, tenantID, serverID)
	})
}

// Secrets returns a server's sealed secrets.
func (st *UpstreamStore) Secrets(ctx context.Context, tenantID, serverID uuid.UUID) ([]upstreams.Secret, error) {
	rows, err := st.db.Pool.Query(ctx, `SELECT kind, name, sealed FROM mcp_server_secrets WHERE tenant_id = $1 AND server_id = $2 ORDER BY kind, name`,
		tenantID, serverID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (upstreams.Secret, error) {
		var s upstreams.Secret
		return s, r.Scan(&s.Kind, &s.Name, &s.Sealed)
	})
}

// RewrapAll re-wraps every sealed secret and token (secrets.Holder), all
// in one transaction: a failure leaves every row as it was.
func (st *UpstreamStore) RewrapAll(ctx context.Context, rewrap func(string) (string, bool, error)) (n int, err error) {
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		n = 0
		for _, q := range []struct{ sel, upd string }{
			{`SELECT ctid::text, sealed FROM mcp_server_secrets FOR UPDATE`, `UPDATE mcp_server_secrets SET sealed = $2 WHERE ctid = $1::tid`},
			{`SELECT ctid::text, sealed_access FROM mcp_server_tokens FOR UPDATE`, `UPDATE mcp_server_tokens SET sealed_access = $2 WHERE ctid = $1::tid`},
			{`SELECT ctid::text, sealed_refresh FROM mcp_server_tokens WHERE sealed_refresh <> '' FOR UPDATE`,
				`UPDATE mcp_server_tokens SET sealed_refresh = $2 WHERE ctid = $1::tid`},
			{`SELECT ctid::text, sealed_verifier FROM mcp_oauth_states FOR UPDATE`, `UPDATE mcp_oauth_states SET sealed_verifier = $2 WHERE ctid = $1::tid`},
		} {
			c, err := rewrapRows(ctx, tx, q.sel, q.upd, rewrap)
			n += c
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		n = 0
	}
	return n, err
}

// rewrapRows re-wraps the value column of the rows sel returns (ctid,
// value), saving each changed one with upd.
func rewrapRows(ctx context.Context, tx pgx.Tx, sel, upd string, rewrap func(string) (string, bool, error)) (int, error) {
	rows, err := tx.Query(ctx, sel)
	if err != nil {
		return 0, err
	}
	type row struct{ id, value string }
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.value)
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, x := range all {
		nv, changed, err := rewrap(x.value)
		if err != nil {
			return n, err
		}
		if !changed {
			continue
		}
		if _, err := tx.Exec(ctx, upd, x.id, nv); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
