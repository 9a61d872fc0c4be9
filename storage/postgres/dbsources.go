package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
)

// DBSourceStore implements dbsources.Store.
type DBSourceStore struct{ db *DB }

// NewDBSourceStore returns a DBSourceStore on db.
func NewDBSourceStore(db *DB) *DBSourceStore { return &DBSourceStore{db: db} }

var _ dbsources.Store = (*DBSourceStore)(nil)

const dbSourceCols = `id, tenant_id, name, driver, host, port, database, username, sslmode, sealed_password, schemas, tables,
	statement_timeout_ms, max_rows, max_bytes, max_concurrent, description, created_by, created_at, updated_at`

func scanDBSource(row pgx.Row) (dbsources.Source, error) {
	var s dbsources.Source
	var timeoutMS int64
	err := row.Scan(&s.ID, &s.TenantID, &s.Name, &s.Kind, &s.Endpoint.Host, &s.Endpoint.Port, &s.Endpoint.Database,
		&s.Endpoint.User, &s.Endpoint.SSLMode, &s.SealedPassword, &s.Schemas, &s.Tables, &timeoutMS, &s.Limits.MaxRows,
		&s.Limits.MaxBytes, &s.Limits.MaxConcurrent, &s.Description, &s.CreatedBy, &s.CreatedAt, &s.UpdatedAt)
	s.Limits.StatementTimeout = time.Duration(timeoutMS) * time.Millisecond
	s.PasswordSet = s.SealedPassword != ""
	return s, err
}

func dbSourceArgs(s *dbsources.Source) []any {
	return []any{s.TenantID, s.ID, s.Name, s.Kind, s.Endpoint.Host, s.Endpoint.Port, s.Endpoint.Database, s.Endpoint.User,
		s.Endpoint.SSLMode, s.SealedPassword, s.Schemas, s.Tables, s.Limits.StatementTimeout.Milliseconds(), s.Limits.MaxRows,
		s.Limits.MaxBytes, s.Limits.MaxConcurrent, s.Description, s.UpdatedAt}
}

// Create inserts s unless the tenant already holds max sources.
func (st *DBSourceStore) Create(ctx context.Context, s *dbsources.Source, max int) error {
	return st.db.InTx(ctx, func(tx pgx.Tx) error {
		// Serialize the tenant's creations so the count stays under max.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE`, s.TenantID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM db_sources WHERE tenant_id = $1`, s.TenantID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return fault.New(fault.Conflict, "the tenant holds %d database sources already", max)
		}
		err := tx.QueryRow(ctx, `INSERT INTO db_sources (tenant_id, id, name, driver, host, port, database, username, sslmode,
			sealed_password, schemas, tables, statement_timeout_ms, max_rows, max_bytes, max_concurrent, description, updated_at, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) RETURNING created_at`,
			append(dbSourceArgs(s), s.CreatedBy)...).Scan(&s.CreatedAt)
		return mapErr(err, "database source "+s.Name)
	})
}

// Source returns the tenant's source with id.
func (st *DBSourceStore) Source(ctx context.Context, tenantID, id uuid.UUID) (dbsources.Source, error) {
	s, err := scanDBSource(st.db.Pool.QueryRow(ctx, `SELECT `+dbSourceCols+` FROM db_sources WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return s, mapErr(err, "database source")
}

// SourceByName returns the tenant's source named name.
func (st *DBSourceStore) SourceByName(ctx context.Context, tenantID uuid.UUID, name string) (dbsources.Source, error) {
	s, err := scanDBSource(st.db.Pool.QueryRow(ctx, `SELECT `+dbSourceCols+` FROM db_sources WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	return s, mapErr(err, "database source "+name)
}

// List returns the tenant's sources by name.
func (st *DBSourceStore) List(ctx context.Context, tenantID uuid.UUID) ([]dbsources.Source, error) {
	rows, err := st.db.Pool.Query(ctx, `SELECT `+dbSourceCols+` FROM db_sources WHERE tenant_id = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dbsources.Source, error) { return scanDBSource(r) })
}

// Existing returns which of names the tenant has sources for.
func (st *DBSourceStore) Existing(ctx context.Context, tenantID uuid.UUID, names []string) ([]string, error) {
	rows, err := st.db.Pool.Query(ctx, `SELECT name FROM db_sources WHERE tenant_id = $1 AND name = ANY($2)`, tenantID, names)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
