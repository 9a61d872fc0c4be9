package identity

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
)

// SetMemberRole changes a member's role. Demoting the tenant's last owner is
// fault.Conflict, so a tenant always keeps someone who can manage members.
func (s *Service) SetMemberRole(ctx context.Context, tenantID, id uuid.UUID, role Role) (Member, error) {
	if !role.Valid() {
		return Member{}, fault.New(fault.Invalid, "role %q must be one of owner, admin, operator, viewer", role)
	}
	if role != RoleOwner {
		if err := s.keepAnOwner(ctx, tenantID, id); err != nil {
			return Member{}, err
		}
	}
	m, err := s.store.UpdateMember(ctx, tenantID, id, func(m *Member) error {
		m.Role = role
		return nil
	})
	if err != nil {
		return Member{}, err
	}
	// The role bounds the scopes of the member's OAuth tokens.
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.ClientChanged})
	return m, nil
}

// RemoveMember deletes a member. Removing the tenant's last owner is
// fault.Conflict.
func (s *Service) RemoveMember(ctx context.Context, tenantID, id uuid.UUID) error {
	if err := s.keepAnOwner(ctx, tenantID, id); err != nil {
		return err
	}
	if err := s.store.DeleteMember(ctx, tenantID, id); err != nil {
		return err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.ClientChanged})
	return nil
}

// keepAnOwner refuses a change that would leave the tenant without an
// owner once member id stops being one. Two concurrent demotions can still
// race; the dashboard and CLI are human-paced, so this is a guard rail, not
// a lock.
func (s *Service) keepAnOwner(ctx context.Context, tenantID, id uuid.UUID) error {
	ms, err := s.store.ListMembers(ctx, tenantID)
	if err != nil {
		return err
	}
	owners, isOwner := 0, false
	for _, m := range ms {
		if m.Role == RoleOwner {
			owners++
			isOwner = isOwner || m.ID == id
		}
	}
	if isOwner && owners == 1 {
		return fault.New(fault.Conflict, "this is the tenant's last owner; make another member owner first")
	}
	return nil
}
