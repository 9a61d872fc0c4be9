package identity

import (
	"context"
	"net/mail"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
)

// MemberUpdate is a change to a member's role, password or both; nil
// fields stay.
type MemberUpdate struct {
	Role     *Role
	Password *string
}

func (u MemberUpdate) change(before *Member) MemberChange {
	c := MemberChange{Before: before, Password: u.Password != nil}
	if u.Role != nil {
		c.Role = *u.Role
	}
	return c
}

// CreateMember adds a member as the deployment itself (the CLI, `visor
// dev`); request paths use AddMember with their principal.
func (s *Service) CreateMember(ctx context.Context, tenantID uuid.UUID, email, password string, role Role) (Member, error) {
	return s.AddMember(ctx, System, tenantID, email, password, role)
}

// SetMemberRole changes a member's role as the deployment itself.
func (s *Service) SetMemberRole(ctx context.Context, tenantID, id uuid.UUID, role Role) (Member, error) {
	return s.UpdateMember(ctx, System, tenantID, id, MemberUpdate{Role: &role})
}

// SetMemberPassword replaces a member's password as the deployment itself.
func (s *Service) SetMemberPassword(ctx context.Context, tenantID, id uuid.UUID, password string) error {
	_, err := s.UpdateMember(ctx, System, tenantID, id, MemberUpdate{Password: &password})
	return err
}

// RemoveMember deletes a member as the deployment itself.
func (s *Service) RemoveMember(ctx context.Context, tenantID, id uuid.UUID) error {
	return s.DeleteMember(ctx, System, tenantID, id)
}

// AddMember validates and creates a member with a hashed password, if by
// may (Principal.CheckMemberChange: only owners add owners).
func (s *Service) AddMember(ctx context.Context, by Principal, tenantID uuid.UUID, email, password string, role Role) (Member, error) {
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != strings.TrimSpace(email) || len(email) > 254 {
		return Member{}, fault.New(fault.Invalid, "email %q is not a valid address", email)
	}
	if !role.Valid() {
		return Member{}, fault.New(fault.Invalid, "role %q must be one of owner, admin, operator, viewer", role)
	}
	if err := by.CheckMemberChange(MemberChange{Role: role, Password: true}); err != nil {
		return Member{}, err
	}
	if err := checkPassword(password); err != nil {
		return Member{}, err
	}
	m := Member{ID: uuid.New(), TenantID: tenantID, Email: strings.ToLower(addr.Address), Role: role, PasswordHash: HashSecret(password)}
	if err := s.store.CreateMember(ctx, &m); err != nil {
		return Member{}, err
	}
	return m, nil
}

// UpdateMember changes a member's role, password or both in one
// transaction, if by may (CheckMemberChange, against the member as it is
// inside the transaction). Setting the password or lowering the role ends
// the member's other dashboard sessions (all but by's own, when by is that
// member's session). Demoting the tenant's last owner is fault.Conflict.
func (s *Service) UpdateMember(ctx context.Context, by Principal, tenantID, id uuid.UUID, u MemberUpdate) (Member, error) {
	if u.Role != nil && !u.Role.Valid() {
		return Member{}, fault.New(fault.Invalid, "role %q must be one of owner, admin, operator, viewer", *u.Role)
	}
	if u.Password != nil {
		if err := checkPassword(*u.Password); err != nil {
			return Member{}, err
		}
	}
	cur, err := s.store.Member(ctx, tenantID, id)
	if err != nil {
		return Member{}, err
	}
	if err := by.CheckMemberChange(u.change(&cur)); err != nil {
		return Member{}, err
	}
	if u.Role != nil && *u.Role != RoleOwner {
		if err := s.keepAnOwner(ctx, tenantID, id); err != nil {
			return Member{}, err
		}
	}
	var before Member
	m, err := s.store.UpdateMember(ctx, tenantID, id, func(m *Member) error {
		before = *m
		// Check again against the row as it is now, under its lock.
		if err := by.CheckMemberChange(u.change(&before)); err != nil {
			return err
		}
		if u.Role != nil {
			m.Role = *u.Role
		}
		if u.Password != nil {
			m.PasswordHash = HashSecret(*u.Password)
		}
		return nil
	})
	if err != nil {
		return Member{}, err
	}
	if u.Password != nil || before.Role.Outranks(m.Role) {
		if err := s.store.EndSessions(ctx, tenantID, id, keptSession(by, id)); err != nil {
			return m, err
		}
	}
	if m.Role != before.Role {
		// The role bounds the member's OAuth tokens and the keys they made.
		s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.ClientChanged})
	}
	return m, nil
}

// DeleteMember removes a member, if by may, revoking the API keys the
// member made and ending their sessions. Removing the tenant's last owner
// is fault.Conflict.
func (s *Service) DeleteMember(ctx context.Context, by Principal, tenantID, id uuid.UUID) error {
	m, err := s.store.Member(ctx, tenantID, id)
	if err != nil {
		return err
	}
	if err := by.CheckMemberChange(MemberChange{Before: &m, Remove: true}); err != nil {
		return err
	}
	if err := s.keepAnOwner(ctx, tenantID, id); err != nil {
		return err
	}
	v, err := s.store.DeleteMember(ctx, tenantID, id)
	if err != nil {
		return err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.ClientChanged, Version: v})
	return nil
}

// keptSession is the session of member id that a change by by leaves
// alone: by's own, when by is that member signed in.
func keptSession(by Principal, id uuid.UUID) string {
	if c := by.Credential(); by.MemberID == id && c.Kind == CredentialSession {
		return c.ID
	}
	return ""
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
