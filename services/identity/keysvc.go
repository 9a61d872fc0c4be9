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

// CreateKey creates a key and returns it with its bearer token, which is
// never available again.
func (s *Service) CreateKey(ctx context.Context, tenantID uuid.UUID, in NewKey) (Key, string, error) {
	switch in.Kind {
	case KeyOperator:
		if in.AgentID != uuid.Nil {
			return Key{}, "", fault.New(fault.Invalid, "an operator key acts as no agent; omit agent_id")
		}
	case KeyAgent:
		a, err := s.store.Agent(ctx, tenantID, in.AgentID)
		if err != nil {
			return Key{}, "", err
		}
		if a.Status != AgentActive {
			return Key{}, "", fault.New(fault.Conflict, "agent %s is in the trash", a.Name)
		}
	default:
		return Key{}, "", fault.New(fault.Invalid, `key kind must be "operator" or "agent"`)
	}
	if err := checkText("key name", in.Name, 1, 100); err != nil {
		return Key{}, "", err
	}
	for _, sc := range in.Scopes {
		if !KnownScope(sc) {
			return Key{}, "", fault.New(fault.Invalid, "unknown scope %q; known scopes: %v", sc, AllScopes)
		}
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()) {
		return Key{}, "", fault.New(fault.Invalid, "expires_at must be in the future")
	}
	k := Key{ID: uuid.New(), TenantID: tenantID, Kind: in.Kind, AgentID: in.AgentID, Name: in.Name,
		Scopes: slices.Compact(slices.Sorted(slices.Values(in.Scopes))), ExpiresAt: in.ExpiresAt}
	token, secret := NewKeySecret(k.ID)
	k.SecretHash = HashSecret(secret)
	v, err := s.store.CreateKey(ctx, &k)
	if err != nil {
		return Key{}, "", err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.KeyChanged, AgentID: k.AgentID, Version: v})
	return k, token, nil
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
