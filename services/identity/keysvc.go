package identity

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
)

// NewKey is what a caller supplies to create a key.
type NewKey struct {
	Kind      KeyKind
	AgentID   uuid.UUID // KeyAgent only
	Name      string
	Scopes    []string
	ExpiresAt *time.Time
}

// DefaultEmployeeScopes are the scopes of an agent key or a round token
// whose creator names none: every tool scope, so the AI employee's own
// settings and [permissions] decide what it calls.
var DefaultEmployeeScopes = []string{ScopeToolsAdmin, ScopeToolsRead, ScopeToolsWrite}

// CreateKey creates a key as the deployment itself (the CLI, `visor dev`);
// request paths use IssueKey with their principal.
func (s *Service) CreateKey(ctx context.Context, tenantID uuid.UUID, in NewKey) (Key, string, error) {
	return s.IssueKey(ctx, System, tenantID, in)
}

// IssueKey creates a key made by by and returns it with its bearer token,
// which is never available again. by needs ManageKeys, and the key's
// scopes must be ones by holds (Principal.Delegate); without scopes, an
// operator key gets every scope by holds and an agent key the tool scopes
// of DefaultEmployeeScopes that by holds. The key records by, and a key
// made by a member (or by a key a member made) stays bounded by that
// member's current role.
func (s *Service) IssueKey(ctx context.Context, by Principal, tenantID uuid.UUID, in NewKey) (Key, string, error) {
	if err := by.Check(ManageKeys); err != nil {
		return Key{}, "", err
	}
	defaults := by.Scopes
	switch in.Kind {
	case KeyOperator:
		if in.AgentID != uuid.Nil {
			return Key{}, "", fault.New(fault.Invalid, "an operator key acts as no agent; omit agent_id")
		}
	case KeyAgent:
		if err := s.activeAgent(ctx, tenantID, in.AgentID); err != nil {
			return Key{}, "", err
		}
		if i := slices.IndexFunc(in.Scopes, func(sc string) bool { return !slices.Contains(ToolScopes, sc) }); i >= 0 {
			return Key{}, "", fault.New(fault.Invalid, "an agent key holds tool scopes only (%v), not %q", ToolScopes, in.Scopes[i])
		}
		defaults = DefaultEmployeeScopes
	default:
		return Key{}, "", fault.New(fault.Invalid, `key kind must be "operator" or "agent"`)
	}
	if err := checkText("key name", in.Name, 1, 100); err != nil {
		return Key{}, "", err
	}
	scopes, err := by.Delegate(in.Scopes, defaults)
	if err != nil {
		return Key{}, "", err
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()) {
		return Key{}, "", fault.New(fault.Invalid, "expires_at must be in the future")
	}
	k := Key{ID: uuid.New(), TenantID: tenantID, Kind: in.Kind, AgentID: in.AgentID, Name: in.Name, Scopes: scopes,
		ExpiresAt: in.ExpiresAt, CreatedBy: by.ID(), CreatorMember: by.ActingMember()}
	token, secret := NewKeySecret(k.ID)
	k.SecretHash = HashSecret(secret)
	v, err := s.store.CreateKey(ctx, &k)
	if err != nil {
		return Key{}, "", err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.KeyChanged, AgentID: k.AgentID, Version: v})
	return k, token, nil
}

func (s *Service) activeAgent(ctx context.Context, tenantID, id uuid.UUID) error {
	a, err := s.store.Agent(ctx, tenantID, id)
	if err != nil {
		return err
	}
	if a.Status != AgentActive {
		return fault.New(fault.Conflict, "agent %s is in the trash", a.Name)
	}
	return nil
}

// RevokeKey revokes a key and announces it: replicas stop accepting it when
// they hear the event, and within auth.CredentialCacheTTL if it is lost.
func (s *Service) RevokeKey(ctx context.Context, tenantID, id uuid.UUID) (Key, error) {
	k, v, err := s.store.RevokeKey(ctx, tenantID, id)
	if err != nil {
		return Key{}, err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.KeyChanged, AgentID: k.AgentID, Version: v})
	return k, nil
}
