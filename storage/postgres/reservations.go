package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/fault"
)

// ReservationStore implements agents.Reservations.
type ReservationStore struct{ db *DB }

var _ agents.Reservations = (*ReservationStore)(nil)

// NewReservationStore returns the reserved-name store on db.
func NewReservationStore(db *DB) *ReservationStore { return &ReservationStore{db: db} }

// Reserve records r, replacing an older reservation of the same name.
func (s *ReservationStore) Reserve(ctx context.Context, r agents.Reservation) (err error) {
	defer fault.Wrap(&err, "reserve agent name %s", r.Name)
	_, err = s.db.Pool.Exec(ctx, `INSERT INTO agent_name_reservations (tenant_id, name, agent_id, reserved_by)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, name) DO UPDATE SET agent_id = $3, reserved_by = $4, reserved_at = now()`,
		r.TenantID, r.Name, r.AgentID, r.ReservedBy)
	return mapErr(err, "reservation")
}

// List returns the tenant's reservations by name.
func (s *ReservationStore) List(ctx context.Context, tenantID uuid.UUID) (_ []agents.Reservation, err error) {
	defer fault.Wrap(&err, "list reserved agent names")
	rows, err := s.db.Pool.Query(ctx, `SELECT tenant_id, name, agent_id, reserved_by, reserved_at
		FROM agent_name_reservations WHERE tenant_id = $1 ORDER BY name`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (agents.Reservation, error) {
		var v agents.Reservation
		err := r.Scan(&v.TenantID, &v.Name, &v.AgentID, &v.ReservedBy, &v.ReservedAt)
		return v, err
	})
}

// Release frees name; fault.NotFound when the tenant has no such reservation.
func (s *ReservationStore) Release(ctx context.Context, tenantID uuid.UUID, name string) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM agent_name_reservations WHERE tenant_id = $1 AND name = $2`, tenantID, name)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "the name %q is not reserved", name)
	}
	return nil
}
