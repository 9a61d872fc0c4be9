package postgres

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

const agentCols = `tenant_id, id, name, department, reports_to, role, budget_cents, capabilities, fork,
	permissions, settings_version, status, trashed_at, created_at, updated_at`

func scanAgent(row pgx.Row) (identity.Agent, error) {
	var a identity.Agent
	var reportsTo *uuid.UUID
	var caps, fork, perms []byte
	err := row.Scan(&a.TenantID, &a.ID, &a.Name, &a.Department, &reportsTo, &a.Role, &a.BudgetCents,
		&caps, &fork, &perms, &a.SettingsVersion, &a.Status, &a.TrashedAt, &a.CreatedAt, &a.UpdatedAt)
	if err != nil {
		return a, err
	}
	if reportsTo != nil {
		a.ReportsTo = *reportsTo
	}
	if err := json.Unmarshal(caps, &a.Settings.Capabilities); err != nil {
		return a, fault.Newf(fault.Internal, err, "agent %s capabilities are unreadable", a.Name)
	}
	if err := json.Unmarshal(fork, &a.Settings.Fork); err != nil {
		return a, fault.Newf(fault.Internal, err, "agent %s fork settings are unreadable", a.Name)
	}
	a.Settings.Permissions = decodePermissions(perms)
	return a, nil
}

// decodePermissions reads the permissions column: NULL is "no section"
// (nil, everything allowed); a document that does not decode strictly is
// Unreadable, which refuses every permission-gated tool.
func decodePermissions(raw []byte) *identity.Permissions {
	if raw == nil {
		return nil
	}
	var p identity.Permissions
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return &identity.Permissions{Unreadable: true}
	}
	return &p
}

func agentArgs(a *identity.Agent) (reportsTo *uuid.UUID, caps, fork, perms []byte, err error) {
	if a.ReportsTo != uuid.Nil {
		reportsTo = &a.ReportsTo
	}
	if caps, err = json.Marshal(a.Settings.Capabilities); err != nil {
		return
	}
	if fork, err = json.Marshal(a.Settings.Fork); err != nil {
		return
	}
	if p := a.Settings.Permissions; p != nil && !p.Unreadable {
		perms, err = json.Marshal(p)
	}
	return
}

// CreateAgent inserts a and bumps the tenant's policy version.
func (s *IdentityStore) CreateAgent(ctx context.Context, a *identity.Agent) (v int64, err error) {
	reportsTo, caps, fork, perms, err := agentArgs(a)
	if err != nil {
		return 0, err
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO agents (tenant_id, id, name, department, reports_to, role, budget_cents,
			capabilities, fork, permissions, settings_version, status)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING created_at, updated_at`,
			a.TenantID, a.ID, a.Name, a.Department, reportsTo, a.Role, a.BudgetCents, caps, fork, perms,
			a.SettingsVersion, a.Status).Scan(&a.CreatedAt, &a.UpdatedAt)
		if err != nil {
			return mapErr(err, "agent "+a.Name)
		}
		v, err = BumpPolicyVersion(ctx, tx, a.TenantID)
		return err
	})
	return v, err
}

// Agent returns the tenant's agent with id.
func (s *IdentityStore) Agent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error) {
	a, err := scanAgent(s.db.Pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return a, mapErr(err, "agent")
}

// AgentByName returns the tenant's agent named name.
func (s *IdentityStore) AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (identity.Agent, error) {
	a, err := scanAgent(s.db.Pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	return a, mapErr(err, "agent "+name)
}

// ListAgents returns the tenant's agents by name, trashed ones included.
func (s *IdentityStore) ListAgents(ctx context.Context, tenantID uuid.UUID) ([]identity.Agent, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+agentCols+` FROM agents WHERE tenant_id = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.Agent, error) { return scanAgent(r) })
}

// UpdateAgent applies fn under a row lock, saves the agent, increments its
// settings version and bumps the tenant's policy version.
func (s *IdentityStore) UpdateAgent(ctx context.Context, tenantID, id uuid.UUID, fn func(*identity.Agent) error) (a identity.Agent, v int64, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		a, err = scanAgent(tx.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return mapErr(err, "agent")
		}
		if err := fn(&a); err != nil {
			return err
		}
		reportsTo, caps, fork, perms, err := agentArgs(&a)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE agents SET department = $3, reports_to = $4, role = $5, budget_cents = $6,
			capabilities = $7, fork = $8, permissions = $9, settings_version = settings_version + 1,
			status = $10, trashed_at = $11, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING settings_version, updated_at`,
			tenantID, id, a.Department, reportsTo, a.Role, a.BudgetCents, caps, fork, perms, a.Status, a.TrashedAt).
			Scan(&a.SettingsVersion, &a.UpdatedAt)
		if err != nil {
			return mapErr(err, "agent")
		}
		v, err = BumpPolicyVersion(ctx, tx, tenantID)
		return err
	})
	return a, v, err
}

// PurgeAgent deletes the tenant's agent with id and bumps the policy version.
func (s *IdentityStore) PurgeAgent(ctx context.Context, tenantID, id uuid.UUID) (v int64, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM agents WHERE tenant_id = $1 AND id = $2`, tenantID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.New(fault.NotFound, "agent not found")
		}
		v, err = BumpPolicyVersion(ctx, tx, tenantID)
		return err
	})
	return v, err
}
