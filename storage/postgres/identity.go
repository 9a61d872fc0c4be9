package postgres

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// IdentityStore implements identity.Store.
type IdentityStore struct{ db *DB }

var _ identity.Store = (*IdentityStore)(nil)

// NewIdentityStore returns the identity store on db.
func NewIdentityStore(db *DB) *IdentityStore { return &IdentityStore{db: db} }

// BumpPolicyVersion increases the tenant's policy version inside tx and
// returns the new value. Every change to a policy input calls it in the
// transaction that makes the change.
func BumpPolicyVersion(ctx context.Context, q Querier, tenantID uuid.UUID) (int64, error) {
	var v int64
	err := q.QueryRow(ctx, `UPDATE tenants SET policy_version = policy_version + 1, updated_at = now()
		WHERE id = $1 RETURNING policy_version`, tenantID).Scan(&v)
	return v, mapErr(err, "tenant")
}

const tenantCols = `id, slug, name, settings, created_at, updated_at`

func scanTenant(row pgx.Row) (identity.Tenant, error) {
	var t identity.Tenant
	var settings []byte
	if err := row.Scan(&t.ID, &t.Slug, &t.Name, &settings, &t.CreatedAt, &t.UpdatedAt); err != nil {
		return t, err
	}
	if err := json.Unmarshal(settings, &t.Settings); err != nil {
		return t, fault.Newf(fault.Internal, err, "tenant settings are unreadable")
	}
	return t, nil
}

// CreateTenant inserts t and fills its timestamps.
func (s *IdentityStore) CreateTenant(ctx context.Context, t *identity.Tenant) (err error) {
	defer fault.Wrap(&err, "create tenant %q", t.Slug)
	settings, err := json.Marshal(t.Settings)
	if err != nil {
		return err
	}
	err = s.db.Pool.QueryRow(ctx, `INSERT INTO tenants (id, slug, name, settings) VALUES ($1, $2, $3, $4)
		RETURNING created_at, updated_at`, t.ID, t.Slug, t.Name, settings).Scan(&t.CreatedAt, &t.UpdatedAt)
	return mapErr(err, "tenant "+t.Slug)
}

// Tenant returns the tenant with id.
func (s *IdentityStore) Tenant(ctx context.Context, id uuid.UUID) (identity.Tenant, error) {
	t, err := scanTenant(s.db.Pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE id = $1`, id))
	return t, mapErr(err, "tenant")
}

// TenantBySlug returns the tenant with slug.
func (s *IdentityStore) TenantBySlug(ctx context.Context, slug string) (identity.Tenant, error) {
	t, err := scanTenant(s.db.Pool.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE slug = $1`, slug))
	return t, mapErr(err, "tenant "+slug)
}

// ListTenants returns every tenant by slug.
func (s *IdentityStore) ListTenants(ctx context.Context) ([]identity.Tenant, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+tenantCols+` FROM tenants ORDER BY slug`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.Tenant, error) { return scanTenant(r) })
}

// UpdateTenant applies fn under a row lock and saves name and settings. The
// lock leaves the row's key alone (FOR NO KEY UPDATE), so the rows that
// name the tenant — every audit row among them — are written meanwhile.
func (s *IdentityStore) UpdateTenant(ctx context.Context, id uuid.UUID, fn func(*identity.Tenant) error) (t identity.Tenant, v int64, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		t, err = scanTenant(tx.QueryRow(ctx, `SELECT `+tenantCols+` FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, id))
		if err != nil {
			return mapErr(err, "tenant")
		}
		if err := fn(&t); err != nil {
			return err
		}
		settings, err := json.Marshal(t.Settings)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE tenants SET name = $2, settings = $3 WHERE id = $1`, id, t.Name, settings); err != nil {
			return err
		}
		v, err = BumpPolicyVersion(ctx, tx, id)
		return err
	})
	return t, v, err
}

// PolicyVersion returns the tenant's policy version.
func (s *IdentityStore) PolicyVersion(ctx context.Context, tenantID uuid.UUID) (int64, error) {
	var v int64
	err := s.db.Pool.QueryRow(ctx, `SELECT policy_version FROM tenants WHERE id = $1`, tenantID).Scan(&v)
	return v, mapErr(err, "tenant")
}
