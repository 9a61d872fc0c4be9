package tools

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// Directory is what the policy reads about tenants and agents.
// identity.Store implements it.
type Directory interface {
	Tenant(ctx context.Context, id uuid.UUID) (identity.Tenant, error)
	Agent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error)
}

// Subjects loads Subjects for principals, with a short cache so that a busy
// caller does not read Postgres on every request. A fresh load (Fresh, and
// the live hub's VisibleFunc) refreshes the cache, so a client told
// list_changed re-reads the new list.
type Subjects struct {
	dir    Directory
	grants Grants
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	tenants map[uuid.UUID]cached[versioned]
	agents  map[[2]uuid.UUID]cached[identity.Agent]
}

// versioned is a tenant row with the policy version read just before it,
// so the row is at least as new as the version.
type versioned struct {
	tenant  identity.Tenant
	version int64
}

// Versioned is what a Directory implements to let Subjects carry the
// tenant's policy version (identity.Store does).
type Versioned interface {
	PolicyVersion(ctx context.Context, tenantID uuid.UUID) (int64, error)
}

type cached[T any] struct {
	v  T
	at time.Time
}

// NewSubjects returns a loader. ttl 0 disables the cache; grants may be
// NoGrants{}.
func NewSubjects(dir Directory, grants Grants, ttl time.Duration) *Subjects {
	return &Subjects{dir: dir, grants: grants, ttl: ttl, now: time.Now,
		tenants: map[uuid.UUID]cached[versioned]{}, agents: map[[2]uuid.UUID]cached[identity.Agent]{}}
}

// Load returns p's Subject, from the cache when it is fresh enough. An
// employee whose agent is missing or in the trash is fault.Unauthorized.
func (s *Subjects) Load(ctx context.Context, p identity.Principal) (*Subject, error) {
	return s.load(ctx, p, false)
}

// Fresh returns p's Subject read from storage, refreshing the cache.
func (s *Subjects) Fresh(ctx context.Context, p identity.Principal) (*Subject, error) {
	return s.load(ctx, p, true)
}

func (s *Subjects) load(ctx context.Context, p identity.Principal, fresh bool) (*Subject, error) {
	t, err := getCached(s, s.tenants, p.TenantID, fresh, func() (versioned, error) {
		v := int64(-1)
		if d, ok := s.dir.(Versioned); ok {
			var err error
			if v, err = d.PolicyVersion(ctx, p.TenantID); err != nil {
				return versioned{}, err
			}
		}
		t, err := s.dir.Tenant(ctx, p.TenantID)
		return versioned{tenant: t, version: v}, err
	})
	if err != nil {
		return nil, err
	}
	sub := &Subject{Principal: p, Tenant: t.tenant, PolicyVersion: t.version}
	if p.Kind != identity.KindEmployee {
		return sub, nil
	}
	a, err := getCached(s, s.agents, [2]uuid.UUID{p.TenantID, p.AgentID}, fresh, func() (identity.Agent, error) {
		return s.dir.Agent(ctx, p.TenantID, p.AgentID)
	})
	if fault.Is(err, fault.NotFound) || (err == nil && a.Status != identity.AgentActive) {
		return nil, fault.New(fault.Unauthorized, "this credential's AI employee no longer exists or is in the trash")
	}
	if err != nil {
		return nil, err
	}
	sub.Agent = &a
	if len(a.Settings.Capabilities.ScopedTools) > 0 {
		// A grant store that cannot answer leaves every scoped tool hidden.
		sub.Grants, _ = s.grants.LiveGrants(ctx, p.TenantID, p.AgentID)
	}
	return sub, nil
}

// Forget drops the cached rows a committed change may have made stale: the
// tenant's, and the agent's (every agent of the tenant when agentID is
// uuid.Nil). Each replica calls it for every change event it hears, so
// tools/list is current on replicas that hold no stream of the caller.
func (s *Subjects) Forget(tenantID, agentID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tenants, tenantID)
	if agentID != uuid.Nil {
		delete(s.agents, [2]uuid.UUID{tenantID, agentID})
		return
	}
	for k := range s.agents {
		if k[0] == tenantID {
			delete(s.agents, k)
		}
	}
}

func getCached[K comparable, V any](s *Subjects, m map[K]cached[V], k K, fresh bool, load func() (V, error)) (V, error) {
	now := s.now()
	if !fresh && s.ttl > 0 {
		s.mu.Lock()
		c, ok := m[k]
		s.mu.Unlock()
		if ok && now.Sub(c.at) < s.ttl {
			return c.v, nil
		}
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	if s.ttl > 0 {
		s.mu.Lock()
		m[k] = cached[V]{v: v, at: now}
		s.mu.Unlock()
	}
	return v, nil
}

// VisibleFunc returns the live hub's view of the policy: the names of the
// tools p can see right now, read fresh from storage.
func VisibleFunc(reg *Registry, subjects *Subjects) live.VisibleFunc {
	return func(ctx context.Context, p identity.Principal) ([]string, error) {
		s, err := subjects.Fresh(ctx, p)
		if err != nil {
			if fault.Is(err, fault.Unauthorized) {
				return nil, nil // a trashed employee sees nothing
			}
			return nil, err
		}
		vis := reg.Visible(s)
		names := make([]string, len(vis))
		for i, t := range vis {
			names[i] = t.Name
		}
		return names, nil
	}
}
