package auth

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// ValidityStore answers, in one query per kind of credential, which of a
// tenant's credentials can still authenticate. *postgres.DB implements it.
type ValidityStore interface {
	// LiveKeys returns the ids of keys not revoked or expired at now whose
	// agent (for agent keys) is active.
	LiveKeys(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, now time.Time) ([]uuid.UUID, error)
	// LiveRoundTokens returns the ids of round tokens not revoked or
	// expired at now whose agent is active.
	LiveRoundTokens(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, now time.Time) ([]uuid.UUID, error)
	// LiveGrants returns the OAuth grants (request ids) holding an active
	// access token unexpired at now.
	LiveGrants(ctx context.Context, tenantID uuid.UUID, requestIDs []string, now time.Time) ([]string, error)
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

// Credential id prefixes (identity.Principal.CredentialID).
const (
	credKey   = "key:"
	credRound = "round:"
	credOAuth = "oauth:"
)

// StillValid reports, for each principal of tenant tenantID, whether the
// credential named by its CredentialID still authenticates: an API key not
// revoked or expired whose agent is active, an OAuth grant with a live
// access token (not revoked, not expired, not lost to refresh-token reuse
// or consent revocation), a round token not revoked or expired whose agent
// is active. It is live.ValidFunc. It costs at most one query per kind of
// credential, however many principals. Credentials that cannot hold a
// notification stream (member sessions, the platform operator) are reported
// valid; a malformed id is not. An error means nothing is known: the caller
// must not treat any credential as revoked.
func (v *Validity) StillValid(ctx context.Context, tenantID uuid.UUID, ps []identity.Principal) ([]bool, error) {
	out := make([]bool, len(ps))
	var keys, rounds []uuid.UUID
	var grants []string
	for i, p := range ps {
		out[i] = true
		switch {
		case strings.HasPrefix(p.CredentialID, credKey), strings.HasPrefix(p.CredentialID, credRound):
			pre, rest, _ := strings.Cut(p.CredentialID, ":")
			id, err := uuid.Parse(rest)
			if err != nil {
				out[i] = false
				continue
			}
			if pre+":" == credKey {
				keys = append(keys, id)
			} else {
				rounds = append(rounds, id)
			}
		case strings.HasPrefix(p.CredentialID, credOAuth):
			grants = append(grants, strings.TrimPrefix(p.CredentialID, credOAuth))
		}
	}
	now := v.now()
	liveKeys, err := v.store.LiveKeys(ctx, tenantID, keys, now)
	if err != nil {
		return nil, err
	}
	liveRounds, err := v.store.LiveRoundTokens(ctx, tenantID, rounds, now)
	if err != nil {
		return nil, err
	}
	liveGrants, err := v.store.LiveGrants(ctx, tenantID, grants, now)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(liveKeys)+len(liveRounds)+len(liveGrants))
	for _, id := range liveKeys {
		live[credKey+id.String()] = true
	}
	for _, id := range liveRounds {
		live[credRound+id.String()] = true
	}
	for _, id := range liveGrants {
		live[credOAuth+id] = true
	}
	for i, p := range ps {
		if out[i] && (strings.HasPrefix(p.CredentialID, credKey) || strings.HasPrefix(p.CredentialID, credRound) ||
			strings.HasPrefix(p.CredentialID, credOAuth)) {
			out[i] = live[p.CredentialID]
		}
	}
	return out, nil
}
