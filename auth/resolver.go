package auth

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Store is what the resolver reads. identity.Store satisfies it.
type Store interface {
	TenantBySlug(ctx context.Context, slug string) (identity.Tenant, error)
	Tenant(ctx context.Context, id uuid.UUID) (identity.Tenant, error)
	Key(ctx context.Context, tenantID, id uuid.UUID) (identity.Key, error)
	Agent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error)
	Member(ctx context.Context, tenantID, id uuid.UUID) (identity.Member, error)
}

// KeyLocator finds the tenant of a key from its globally unique id, for
// admin routes that do not name their tenant.
type KeyLocator interface {
	KeyTenant(ctx context.Context, keyID uuid.UUID) (uuid.UUID, error)
}

// TokenResolver resolves one family of bearer tokens other than API keys
// (OAuth access tokens, round tokens) inside a known tenant. It returns
// fault.Unauthorized for a token it does not accept.
type TokenResolver interface {
	ResolveToken(ctx context.Context, t identity.Tenant, token string) (identity.Principal, error)
}

// SessionResolver resolves a member's dashboard session cookie.
type SessionResolver interface {
	// SessionCookie is the cookie's name.
	SessionCookie() string
	// ResolveSession returns the session's tenant and principal, or
	// fault.Unauthorized.
	ResolveSession(ctx context.Context, value string) (identity.Tenant, identity.Principal, error)
}

// Resolver turns bearer credentials into principals.
type Resolver struct {
	store    Store
	locator  KeyLocator
	urls     URLs
	verified *verifyCache
	cache    *credCache
	log      *slog.Logger
	now      func() time.Time

	// OAuth resolves OAuth access tokens; Rounds resolves "vsr_" round
	// tokens; Sessions resolves member session cookies (admin routes).
	// Each may be nil, in which case its credentials are refused.
	OAuth    TokenResolver
	Rounds   TokenResolver
	Sessions SessionResolver
}

// VerifyCacheTTL is how long a successful argon2id verification of an API
// key is remembered. Revocation, expiry and trashing are read from the
// database on every request, so the TTL only bounds memory and how long a
// secret that was rotated in place keeps matching (never: the cache entry
// is tied to the stored hash).
const VerifyCacheTTL = 5 * time.Minute

// NewResolver returns a resolver reading store. locator may be nil when no
// admin route lacks a tenant.
func NewResolver(store Store, locator KeyLocator, urls URLs, log *slog.Logger) *Resolver {
	return &Resolver{store: store, locator: locator, urls: urls, log: log, now: time.Now,
		verified: newVerifyCache(VerifyCacheTTL, 100_000, time.Now),
		cache:    newCredCache(CredentialCacheTTL, 100_000, time.Now)}
}

// SetCacheTTL changes how long resolved tenants and principals are
// remembered (CredentialCacheTTL by default); zero turns the cache off.
// Call it before serving.
func (r *Resolver) SetCacheTTL(ttl time.Duration) {
	r.cache = newCredCache(min(ttl, CredentialCacheTTL), 100_000, r.cache.now)
}

// URLs returns the public URLs the resolver names in its challenges.
func (r *Resolver) URLs() URLs { return r.urls }

func unauthorized(msg string) error { return fault.New(fault.Unauthorized, "%s", msg) }

// Resolve returns the principal of token inside tenant t. Every failure is
// fault.Unauthorized except a storage failure, which is returned as is.
//
// A success is remembered for at most CredentialCacheTTL (and never past a
// key's expiry), until a change event of the tenant reaches Forget:
// revoking a credential through the services is refused at once on the
// replica that made the change, on the others once the event arrives, and
// everywhere within the TTL if the event is lost.
func (r *Resolver) Resolve(ctx context.Context, t identity.Tenant, token string) (identity.Principal, error) {
	if token == "" {
		return identity.Principal{}, errNoToken
	}
	sum := sha256.Sum256([]byte(token))
	p, epoch, ok := r.cache.principal(t.ID, sum)
	if ok {
		return p, nil
	}
	p, expires, err := r.resolve(ctx, t, token)
	if err == nil {
		r.cache.putPrincipal(t.ID, sum, p, expires, epoch)
	}
	return p, err
}

// resolve reads token's principal from the stores, with the credential's
// own expiry when known.
func (r *Resolver) resolve(ctx context.Context, t identity.Tenant, token string) (identity.Principal, time.Time, error) {
	var p identity.Principal
	var err error
	switch identity.TokenKindOf(token) {
	case identity.TokenKey:
		return r.resolveKey(ctx, t, token)
	case identity.TokenRound:
		if r.Rounds == nil {
			return p, time.Time{}, unauthorized("round tokens are not accepted here")
		}
		p, err = r.Rounds.ResolveToken(ctx, t, token)
	default:
		if r.OAuth == nil {
			return p, time.Time{}, unauthorized("the bearer token is not valid")
		}
		p, err = r.OAuth.ResolveToken(ctx, t, token)
	}
	return p, time.Time{}, err
}

// resolveKey checks an API key against its row (and its agent's) and
// returns the principal and the key's expiry (zero when it has none). The
// argon2id verification is cached separately, tied to the stored hash.
func (r *Resolver) resolveKey(ctx context.Context, t identity.Tenant, token string) (identity.Principal, time.Time, error) {
	p, k, err := r.readKey(ctx, t, token)
	var exp time.Time
	if err == nil && k.ExpiresAt != nil {
		exp = *k.ExpiresAt
	}
	return p, exp, err
}

func (r *Resolver) readKey(ctx context.Context, t identity.Tenant, token string) (identity.Principal, identity.Key, error) {
	id, secret, ok := identity.ParseKeyToken(token)
	if !ok {
		return identity.Principal{}, identity.Key{}, unauthorized("the API key is malformed")
	}
	// Key ids are global; reading through the URL's tenant makes a key of
	// another tenant look exactly like a missing one.
	k, err := r.store.Key(ctx, t.ID, id)
	if fault.Is(err, fault.NotFound) {
		return identity.Principal{}, k, unauthorized("the API key is not valid")
	}
	if err != nil {
		return identity.Principal{}, k, err
	}
	if k.TenantID != t.ID || !r.verified.verify(token, k.SecretHash, secret) {
		return identity.Principal{}, k, unauthorized("the API key is not valid")
	}
	if !k.Live(r.now()) {
		return identity.Principal{}, k, unauthorized("the API key is revoked or expired")
	}
	p := identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindOperator,
		CredentialID: identity.Credential{Kind: identity.CredentialKey, ID: k.ID.String()}.String(), Scopes: k.Scopes}
	if k.Kind == identity.KeyAgent {
		a, err := r.store.Agent(ctx, t.ID, k.AgentID)
		if fault.Is(err, fault.NotFound) || (err == nil && a.Status != identity.AgentActive) {
			return identity.Principal{}, k, unauthorized("the API key's agent is in the trash or gone")
		}
		if err != nil {
			return identity.Principal{}, k, err
		}
		p.Kind, p.AgentID = identity.KindEmployee, a.ID
	}
	if k.CreatorMember != uuid.Nil {
		if p, err = r.boundByCreator(ctx, t, k, p); err != nil {
			return identity.Principal{}, k, err
		}
	}
	return p, k, nil
}

// boundByCreator bounds the principal of a key a member made by that
// member's current role: the key never does more than its member may, and
// stops working when the member is removed.
func (r *Resolver) boundByCreator(ctx context.Context, t identity.Tenant, k identity.Key, p identity.Principal) (identity.Principal, error) {
	m, err := r.store.Member(ctx, t.ID, k.CreatorMember)
	if fault.Is(err, fault.NotFound) {
		return p, unauthorized("the API key's creator is no longer a member")
	}
	if err != nil {
		return p, err
	}
	p.Role, p.CreatorID = m.Role, m.ID
	p.Scopes, _ = RoleScopes(m.Role, k.Scopes)
	return p, nil
}

// tenantOfKey returns the tenant a key token belongs to, for admin routes
// without a tenant in the path.
func (r *Resolver) tenantOfKey(ctx context.Context, token string) (identity.Tenant, error) {
	id, _, ok := identity.ParseKeyToken(token)
	if !ok || r.locator == nil {
		return identity.Tenant{}, unauthorized("the API key is not valid")
	}
	tid, err := r.locator.KeyTenant(ctx, id)
	if fault.Is(err, fault.NotFound) {
		return identity.Tenant{}, unauthorized("the API key is not valid")
	}
	if err != nil {
		return identity.Tenant{}, err
	}
	return r.store.Tenant(ctx, tid)
}
