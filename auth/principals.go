package auth

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
)

// CredentialCacheTTL bounds how long a replica answers from a resolved
// tenant or principal without reading Postgres. Every change event the
// replica hears (its own at once, other replicas' through Redis) drops the
// tenant's entries sooner; the TTL is the bound when an event is lost. It
// matches VISOR_LIVE_RECONCILE_EVERY's default, the bound on stale live
// streams.
const CredentialCacheTTL = 2 * time.Second

// credCache remembers, per replica, tenants by slug and the principals
// that bearer tokens resolved to, keyed by tenant and the SHA-256 of the
// token (never the token). Only successes are cached; a refused token is
// read again on every request.
type credCache struct {
	mu      sync.Mutex
	tenants map[string]cachedTenant
	byToken map[uuid.UUID]map[[32]byte]cachedPrincipal // tenant → token digest → principal
	n       int                                        // entries in byToken
	epoch   uint64                                     // bumped by every forget
	ttl     time.Duration
	limit   int
	now     func() time.Time
}

type cachedTenant struct {
	t     identity.Tenant
	until time.Time
}

type cachedPrincipal struct {
	p     identity.Principal
	until time.Time
}

func newCredCache(ttl time.Duration, limit int, now func() time.Time) *credCache {
	return &credCache{tenants: map[string]cachedTenant{}, byToken: map[uuid.UUID]map[[32]byte]cachedPrincipal{},
		ttl: ttl, limit: limit, now: now}
}

// tenant returns the cached tenant of slug, or the epoch to pass to
// putTenant after reading it.
func (c *credCache) tenant(slug string) (identity.Tenant, uint64, bool) {
	c.mu.Lock()
	e, ok := c.tenants[slug]
	epoch := c.epoch
	c.mu.Unlock()
	return e.t, epoch, ok && c.now().Before(e.until)
}

// putTenant remembers t unless something was forgotten since epoch: a
// change event that arrives while a request reads Postgres must not be
// undone by that request's older read.
func (c *credCache) putTenant(t identity.Tenant, epoch uint64) {
	if c.ttl <= 0 {
		return
	}
	until := c.now().Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if len(c.tenants) >= c.limit {
		clear(c.tenants)
	}
	c.tenants[t.Slug] = cachedTenant{t: t, until: until}
}

// principal returns the cached principal of token in the tenant, or the
// epoch to pass to putPrincipal after resolving it.
func (c *credCache) principal(tenantID uuid.UUID, sum [32]byte) (identity.Principal, uint64, bool) {
	c.mu.Lock()
	e, ok := c.byToken[tenantID][sum]
	epoch := c.epoch
	c.mu.Unlock()
	if !ok || !c.now().Before(e.until) {
		return identity.Principal{}, epoch, false
	}
	e.p.Scopes = slices.Clone(e.p.Scopes) // callers own what they get
	return e.p, epoch, true
}

// putPrincipal remembers p for the token digest sum until the TTL passes or
// expires, whichever is sooner (a zero expires means no expiry of its
// own), unless something was forgotten since epoch.
func (c *credCache) putPrincipal(tenantID uuid.UUID, sum [32]byte, p identity.Principal, expires time.Time, epoch uint64) {
	if c.ttl <= 0 {
		return
	}
	now := c.now()
	until := now.Add(c.ttl)
	if !expires.IsZero() && expires.Before(until) {
		until = expires
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if c.n >= c.limit {
		c.sweep(now)
	}
	m := c.byToken[tenantID]
	if m == nil {
		m = map[[32]byte]cachedPrincipal{}
		c.byToken[tenantID] = m
	}
	if _, ok := m[sum]; !ok {
		c.n++
	}
	m[sum] = cachedPrincipal{p: p, until: until}
}

// sweep drops expired principals, and all of them if that is not enough.
// Callers hold mu.
func (c *credCache) sweep(now time.Time) {
	for tid, m := range c.byToken {
		for k, e := range m {
			if !now.Before(e.until) {
				delete(m, k)
				c.n--
			}
		}
		if len(m) == 0 {
			delete(c.byToken, tid)
		}
	}
	if c.n >= c.limit {
		clear(c.byToken)
		c.n = 0
	}
}

// forget drops everything cached for the tenant.
func (c *credCache) forget(tenantID uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.n -= len(c.byToken[tenantID])
	delete(c.byToken, tenantID)
	for slug, e := range c.tenants {
		if e.t.ID == tenantID {
			delete(c.tenants, slug)
		}
	}
}

// Forget drops the tenants and principals this replica cached for
// tenantID, whatever agentID names: a committed change to any credential,
// agent, member or setting of the tenant may have made them stale. Every
// replica calls it for every change event it hears; the replica making the
// change calls it before publishing (see Publish).
func (r *Resolver) Forget(tenantID, _ uuid.UUID) { r.cache.forget(tenantID) }

// Publish implements changes.Publisher by forgetting e's tenant, so a
// resolver can sit in a chain of publishers next to the Redis bus.
func (r *Resolver) Publish(_ context.Context, e changes.Event) error {
	r.Forget(e.TenantID, e.AgentID)
	return nil
}

var _ changes.Publisher = (*Resolver)(nil)
