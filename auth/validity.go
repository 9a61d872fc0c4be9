package auth

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/identity"
)

// ValidityStore answers, in one query per kind of credential, which of a
// tenant's credentials can still authenticate. *postgres.DB implements it.
type ValidityStore interface {
	// LiveKeys returns the keys not revoked or expired at now whose agent
	// (for agent keys) is active and whose creating member (for keys a
	// member made) still exists, with that member's current role.
	LiveKeys(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, now time.Time) ([]credentials.LiveKey, error)
	// LiveRoundTokens returns the ids of round tokens not revoked or
	// expired at now whose agent is active.
	LiveRoundTokens(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, now time.Time) ([]uuid.UUID, error)
	// LiveGrants returns the OAuth grants (request ids) holding an active
	// access token unexpired at now, with their member's current role and
	// granted scopes.
	LiveGrants(ctx context.Context, tenantID uuid.UUID, requestIDs []string, now time.Time) ([]credentials.LiveGrant, error)
}

// Validity re-checks the credentials of principals resolved earlier, for
// the live hub: a notification stream outlives the request that opened it,
// so when a credential is revoked the hub asks which of its streams'
// credentials are gone and closes those streams.
type Validity struct {
	store ValidityStore
	now   func() time.Time
}

// NewValidity returns a Validity reading store.
func NewValidity(store ValidityStore) *Validity { return &Validity{store: store, now: time.Now} }

// StillValid reports, for each principal of tenant tenantID, whether its
// credential still authenticates (see Refresh).
func (v *Validity) StillValid(ctx context.Context, tenantID uuid.UUID, ps []identity.Principal) ([]bool, error) {
	_, valid, err := v.refresh(ctx, tenantID, ps)
	return valid, err
}

// Refresh re-checks, for each principal of tenant tenantID, the credential
// named by its CredentialID and returns the principal as that credential
// would resolve now, parallel to ps; the zero Principal (no TenantID) means
// the credential no longer authenticates. Live credentials are: an API key not
// revoked or expired whose agent is active, an OAuth grant with a live
// access token (not revoked, not expired, not lost to refresh-token reuse
// or consent revocation), a round token not revoked or expired whose agent
// is active. An OAuth principal comes back with its grant's scopes bounded
// by its member's current role (RoleScopes, as on every request), so a
// demotion or promotion shows, and so does a key a member made, bounded by
// that member's current role; every other principal comes back unchanged.
// It is live.ValidFunc. It costs at most one query per kind of credential,
// however many principals. Credentials that cannot hold a notification
// stream (member sessions, the platform operator) are reported valid
// (unchanged); a malformed id is not. An error means nothing is known: the
// caller must not treat any credential as revoked or changed.
func (v *Validity) Refresh(ctx context.Context, tenantID uuid.UUID, ps []identity.Principal) ([]identity.Principal, error) {
	fresh, valid, err := v.refresh(ctx, tenantID, ps)
	if err != nil {
		return nil, err
	}
	for i := range fresh {
		if !valid[i] {
			fresh[i] = identity.Principal{}
		}
	}
	return fresh, nil
}

func (v *Validity) refresh(ctx context.Context, tenantID uuid.UUID, ps []identity.Principal) ([]identity.Principal, []bool, error) {
	valid := make([]bool, len(ps))
	var keys, rounds []uuid.UUID
	var grants []string
	creds := make([]identity.Credential, len(ps))
	for i, p := range ps {
		valid[i] = true
		creds[i] = p.Credential()
		switch c := creds[i]; c.Kind {
		case identity.CredentialKey, identity.CredentialRound:
			id, err := uuid.Parse(c.ID)
			if err != nil {
				valid[i] = false
				continue
			}
			if c.Kind == identity.CredentialKey {
				keys = append(keys, id)
			} else {
				rounds = append(rounds, id)
			}
		case identity.CredentialOAuth:
			grants = append(grants, c.ID)
		}
	}
	now := v.now()
	liveKeys, err := v.store.LiveKeys(ctx, tenantID, keys, now)
	if err != nil {
		return nil, nil, err
	}
	liveRounds, err := v.store.LiveRoundTokens(ctx, tenantID, rounds, now)
	if err != nil {
		return nil, nil, err
	}
	liveGrants, err := v.store.LiveGrants(ctx, tenantID, grants, now)
	if err != nil {
		return nil, nil, err
	}
	byKey := make(map[string]credentials.LiveKey, len(liveKeys))
	for _, k := range liveKeys {
		byKey[k.ID.String()] = k
	}
	live := make(map[string]bool, len(liveRounds))
	for _, id := range liveRounds {
		live[id.String()] = true
	}
	byGrant := make(map[string]credentials.LiveGrant, len(liveGrants))
	for _, g := range liveGrants {
		byGrant[g.RequestID] = g
	}
	out := make([]identity.Principal, len(ps))
	for i, p := range ps {
		c := creds[i]
		switch {
		case !valid[i]:
		case c.Kind == identity.CredentialOAuth:
			g, ok := byGrant[c.ID]
			valid[i] = ok
			if ok {
				p.Scopes, _ = RoleScopes(identity.Role(g.Role), g.Scopes)
			}
		case c.Kind == identity.CredentialKey:
			k, ok := byKey[c.ID]
			valid[i] = ok
			if ok && k.Role != "" {
				p.Role = identity.Role(k.Role)
				p.Scopes, _ = RoleScopes(p.Role, k.Scopes)
			}
		case c.Kind == identity.CredentialRound:
			valid[i] = live[c.ID]
		}
		out[i] = p
	}
	return out, valid, nil
}
