package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/dbsources"
)

// Update applies fn to the tenant's source under a row lock and saves it.
func (st *DBSourceStore) Update(ctx context.Context, tenantID, id uuid.UUID, fn func(*dbsources.Source) error) (s dbsources.Source, err error) {
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		s, err = scanDBSource(tx.QueryRow(ctx, `SELECT `+dbSourceCols+` FROM db_sources WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return mapErr(err, "database source")
		}
		if err := fn(&s); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE db_sources SET name = $3, driver = $4, host = $5, port = $6, database = $7, username = $8,
			sslmode = $9, sealed_password = $10, schemas = $11, tables = $12, statement_timeout_ms = $13, max_rows = $14,
			max_bytes = $15, max_concurrent = $16, description = $17, updated_at = $18
			WHERE tenant_id = $1 AND id = $2`, dbSourceArgs(&s)...)
		return mapErr(err, "database source")
	})
	return s, err
}

// removeFromAgents takes name out of the db_sources of every agent of the
// tenant that lists it, keeping the others' order, and returns the agents
// changed.
const removeFromAgents = `
UPDATE agents a SET
	capabilities = CASE WHEN n.list = '[]'::jsonb THEN a.capabilities - 'db_sources'
		ELSE jsonb_set(a.capabilities, '{db_sources}', n.list) END,
	settings_version = a.settings_version + 1, updated_at = now()
FROM (SELECT id, COALESCE((SELECT jsonb_agg(e ORDER BY i) FROM jsonb_array_elements(capabilities->'db_sources') WITH ORDINALITY AS x(e, i)
		WHERE e <> to_jsonb($2::text)), '[]'::jsonb) AS list
	FROM agents WHERE tenant_id = $1 AND capabilities->'db_sources' ? $2) n
WHERE a.tenant_id = $1 AND a.id = n.id
RETURNING a.id`

// Delete removes the tenant's source and its name from every agent's
// settings in one transaction; the policy version is bumped when an agent
// changed.
func (st *DBSourceStore) Delete(ctx context.Context, tenantID, id uuid.UUID) (s dbsources.Source, agents []uuid.UUID, v int64, err error) {
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		s, err = scanDBSource(tx.QueryRow(ctx, `DELETE FROM db_sources WHERE tenant_id = $1 AND id = $2 RETURNING `+dbSourceCols, tenantID, id))
		if err != nil {
			return mapErr(err, "database source")
		}
		rows, err := tx.Query(ctx, removeFromAgents, tenantID, s.Name)
		if err != nil {
			return err
		}
		if agents, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
			return err
		}
		if len(agents) > 0 {
			v, err = BumpPolicyVersion(ctx, tx, tenantID)
		}
		return err
	})
	return s, agents, v, err
}

// RewrapAll re-wraps every sealed password (secrets.Holder), all in one
// transaction: a failure leaves every row as it was.
func (st *DBSourceStore) RewrapAll(ctx context.Context, rewrap func(string) (string, bool, error)) (n int, err error) {
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT tenant_id, id, sealed_password FROM db_sources WHERE sealed_password <> '' FOR UPDATE`)
		if err != nil {
			return err
		}
		type sealed struct {
			tenant, id uuid.UUID
			value      string
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sealed, error) {
			var s sealed
			return s, r.Scan(&s.tenant, &s.id, &s.value)
		})
		if err != nil {
			return err
		}
		for _, s := range all {
			nv, changed, err := rewrap(s.value)
			if err != nil {
				return err
			}
			if !changed {
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE db_sources SET sealed_password = $3 WHERE tenant_id = $1 AND id = $2`, s.tenant, s.id, nv); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		n = 0
	}
	return n, err
}
