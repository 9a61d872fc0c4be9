package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Rounds mints and resolves round tokens: credentials bound to one agent
// and one task, so an employee cannot forge the round it works on. The
// secret is 256 random bits, so it is stored as a plain SHA-256
// and checked without argon2id's cost.
type Rounds struct {
	store  credentials.Store
	agents Store
	now    func() time.Time

	// Changes hears every revocation, so replicas drop cached principals
	// (nil: nobody is told, and caches expire on their TTL).
	Changes changes.Publisher
}

// NewRounds returns Rounds on the given stores.
func NewRounds(store credentials.Store, agents Store) *Rounds {
	return &Rounds{store: store, agents: agents, now: time.Now}
}

// MaxRoundTTL bounds a round token's life.
const MaxRoundTTL = 24 * time.Hour

// DefaultRoundScopes are a round token's scopes when the caller names
// none: every tool scope, as for an agent key, so the AI employee's own
// settings decide what it calls.
var DefaultRoundScopes = identity.DefaultEmployeeScopes

// Mint creates a round token for agent and task, valid for ttl (default one
// hour, at most MaxRoundTTL), and returns it with its bearer string, which
// is never available again. The agent must be active, and the task one of
// the tenant's and unfinished: fault.NotFound for an unknown task (another
// tenant's included), fault.Conflict for a done or cancelled one. The
// token ends with its task (the board's EndRounds revokes every token
// naming it). The token's scopes
// bind what the employee may call with it; callers acting for a principal
// first narrow them to what that principal holds (Principal.Delegate).
func (r *Rounds) Mint(ctx context.Context, tenantID, agentID, taskID uuid.UUID, scopes []string, ttl time.Duration) (credentials.RoundToken, string, error) {
	if taskID == uuid.Nil {
		return credentials.RoundToken{}, "", fault.New(fault.Invalid, "task_id is required")
	}
	if ttl == 0 {
		ttl = time.Hour
	}
	if ttl < time.Minute || ttl > MaxRoundTTL {
		return credentials.RoundToken{}, "", fault.New(fault.Invalid, "ttl must be between 1 minute and %s", MaxRoundTTL)
	}
	for _, s := range scopes {
		if !slices.Contains(identity.ToolScopes, s) {
			return credentials.RoundToken{}, "", fault.New(fault.Invalid, "a round token holds tool scopes only (%v), not %q", identity.ToolScopes, s)
		}
	}
	if len(scopes) == 0 {
		scopes = DefaultRoundScopes
	}
	a, err := r.agents.Agent(ctx, tenantID, agentID)
	if err != nil {
		return credentials.RoundToken{}, "", err
	}
	if a.Status != identity.AgentActive {
		return credentials.RoundToken{}, "", fault.New(fault.Conflict, "agent %s is in the trash", a.Name)
	}
	rt, token := r.Prepare(tenantID, agentID, taskID, scopes, ttl)
	if err := r.store.CreateRoundToken(ctx, &rt); err != nil {
		return credentials.RoundToken{}, "", err
	}
	return rt, token, nil
}

// Prepare returns a new round token and its bearer string without storing
// it, for a caller that stores it in its own transaction (the hand-out of
// a long-poll). Unlike Mint it checks nothing: scopes must be tool scopes
// (DefaultRoundScopes when empty) and ttl positive.
func (r *Rounds) Prepare(tenantID, agentID, taskID uuid.UUID, scopes []string, ttl time.Duration) (credentials.RoundToken, string) {
	if len(scopes) == 0 {
		scopes = DefaultRoundScopes
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	rt := credentials.RoundToken{TenantID: tenantID, ID: uuid.New(), AgentID: agentID, TaskID: taskID,
		Scopes: slices.Compact(slices.Sorted(slices.Values(scopes))), SecretHash: sum[:], ExpiresAt: r.now().Add(ttl)}
	return rt, identity.RoundTokenPrefix + hex.EncodeToString(rt.ID[:]) + "_" + secret
}

// Revoke revokes a round token of the tenant and announces it.
func (r *Rounds) Revoke(ctx context.Context, tenantID, id uuid.UUID) error {
	if err := r.store.RevokeRoundToken(ctx, tenantID, id); err != nil {
		return err
	}
	if r.Changes != nil {
		// A lost event is repaired by the caches' TTL; the revocation is durable.
		_ = r.Changes.Publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.KeyChanged})
	}
	return nil
}

// ResolveToken implements TokenResolver for "vsr_" tokens: an employee
// principal carrying the round's task.
func (r *Rounds) ResolveToken(ctx context.Context, t identity.Tenant, token string) (identity.Principal, error) {
	rest, _ := strings.CutPrefix(token, identity.RoundTokenPrefix)
	if len(rest) != 32+1+43 || rest[32] != '_' {
		return identity.Principal{}, unauthorized("the round token is malformed")
	}
	raw, err := hex.DecodeString(rest[:32])
	if err != nil {
		return identity.Principal{}, unauthorized("the round token is malformed")
	}
	id, _ := uuid.FromBytes(raw)
	rt, err := r.store.RoundToken(ctx, t.ID, id)
	if fault.Is(err, fault.NotFound) {
		return identity.Principal{}, unauthorized("the round token is not valid")
	}
	if err != nil {
		return identity.Principal{}, err
	}
	sum := sha256.Sum256([]byte(rest[33:]))
	if subtle.ConstantTimeCompare(sum[:], rt.SecretHash) != 1 {
		return identity.Principal{}, unauthorized("the round token is not valid")
	}
	if !rt.Live(r.now()) {
		return identity.Principal{}, unauthorized("the round token is revoked or expired")
	}
	a, err := r.agents.Agent(ctx, t.ID, rt.AgentID)
	if fault.Is(err, fault.NotFound) || (err == nil && a.Status != identity.AgentActive) {
		return identity.Principal{}, unauthorized("the round token's agent is in the trash or gone")
	}
	if err != nil {
		return identity.Principal{}, err
	}
	return identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindEmployee, AgentID: a.ID,
		TaskID: rt.TaskID, CredentialID: identity.Credential{Kind: identity.CredentialRound, ID: rt.ID.String()}.String(), Scopes: rt.Scopes}, nil
}
