package grants

import (
	"context"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// MatchFunc reports whether an allowed_tools-style entry names tool for a
// tenant whose clients call Visor server. services/tools.Match is the one
// implementation; it is passed in so this package keeps no copy of it.
type MatchFunc func(entry, tool, server string) bool

// Directory is what the service reads about agents and tenants.
// identity.Store implements it.
type Directory interface {
	Tenant(ctx context.Context, id uuid.UUID) (identity.Tenant, error)
	Agent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error)
}

// MaxTTL bounds a time-limited approval.
const MaxTTL = 366 * 24 * time.Hour

// Service applies the grant rules on top of a Store and announces every
// grant that starts or ends. It is the only writer of requests and grants.
type Service struct {
	// Limits bound each AI employee's capability requests
	// [DefaultRequestLimits]. Set it before the service is used.
	Limits RequestLimits
	store  Store
	dir    Directory
	pub    changes.Publisher
	match  MatchFunc
	log    *slog.Logger
	now    func() time.Time
}

// NewService returns a Service. pub may be changes.Discard{}.
func NewService(store Store, dir Directory, pub changes.Publisher, match MatchFunc, log *slog.Logger) *Service {
	return &Service{Limits: DefaultRequestLimits, store: store, dir: dir, pub: pub, match: match, log: log, now: time.Now}
}

// LiveGrants returns the entries of the agent's grants in force now; it is
// what the tools policy reads (tools.Grants).
func (s *Service) LiveGrants(ctx context.Context, tenantID, agentID uuid.UUID) ([]string, error) {
	return s.store.LiveTools(ctx, tenantID, agentID)
}

// Ask records an AI employee's request for one of its scoped tools.
// Errors: Forbidden for a caller that is not an employee; Invalid for a
// malformed tool or reason, or a tool that is not among the employee's
// scoped_tools (a grant could not show it); Conflict when a grant for it is
// already live, a request for it is already pending, or the employee has
// Limits.MaxPending requests pending; RateLimited when it made
// Limits.PerWindow requests within Limits.Window.
func (s *Service) Ask(ctx context.Context, p identity.Principal, tool, reason string) (Request, error) {
	if !p.IsEmployee() {
		return Request{}, fault.New(fault.Forbidden, "only an AI employee can request a capability; operators grant tools through the admin API")
	}
	tool, reason = strings.TrimSpace(tool), strings.TrimSpace(reason)
	if err := checkEntry(tool); err != nil {
		return Request{}, err
	}
	if reason == "" || len(reason) > 2000 {
		return Request{}, fault.New(fault.Invalid, "reason must say why you need the tool, in 1-2000 bytes")
	}
	a, err := s.dir.Agent(ctx, p.TenantID, p.AgentID)
	if err != nil {
		return Request{}, err
	}
	server, err := s.server(ctx, p.TenantID)
	if err != nil {
		return Request{}, err
	}
	if !s.matchesAny(a.Settings.Capabilities.ScopedTools, tool, server) {
		return Request{}, fault.New(fault.Invalid, "%s is not one of your scoped tools, so a grant would not make it visible; ask an operator to change your capabilities instead", tool)
	}
	live, err := s.store.LiveTools(ctx, p.TenantID, p.AgentID)
	if err != nil {
		return Request{}, err
	}
	if s.matchesAny(live, tool, server) {
		return Request{}, fault.New(fault.Conflict, "you already hold a live grant for %s; read tools/list again", tool)
	}
	r := Request{ID: uuid.New(), TenantID: p.TenantID, AgentID: p.AgentID, Tool: tool, Reason: reason, TaskID: p.TaskID, Status: Pending}
	if err := s.store.CreateRequest(ctx, &r, s.Limits); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Approval is an operator's decision to approve a request.
type Approval struct {
	By string
	// TTL, when positive, limits the grant; zero means until revoked (or
	// until the request's task ends).
	TTL time.Duration
	// Tool, when set, replaces the requested name with an allowed_tools
	// entry (for example "memory_*") matched by the same rule.
	Tool string
	Note string
}

// Approve approves a pending request, creating its grant, and announces it.
// Errors: NotFound, Conflict for a request already decided, Invalid for a
// bad TTL or tool entry.
func (s *Service) Approve(ctx context.Context, tenantID, requestID uuid.UUID, a Approval) (Request, Grant, error) {
	g, err := s.newGrant(tenantID, uuid.Nil, a.Tool, uuid.Nil, a.TTL, a.By)
	if err != nil {
		return Request{}, Grant{}, err
	}
	if len(a.Note) > 2000 {
		return Request{}, Grant{}, fault.New(fault.Invalid, "note must be at most 2000 bytes")
	}
	r, v, err := s.store.Approve(ctx, tenantID, requestID, &g, a.Note)
	if err != nil {
		return Request{}, Grant{}, err
	}
	s.publish(ctx, tenantID, g.AgentID, v)
	return r, g, nil
}

// Deny denies a pending request. Nothing visible changes.
func (s *Service) Deny(ctx context.Context, tenantID, requestID uuid.UUID, by, note string) (Request, error) {
	if len(note) > 2000 {
		return Request{}, fault.New(fault.Invalid, "note must be at most 2000 bytes")
	}
	return s.store.Deny(ctx, tenantID, requestID, by, note)
}

// Grant gives agentID the tool entry directly (no request), optionally for
// a task and for ttl, and announces it.
func (s *Service) Grant(ctx context.Context, tenantID, agentID uuid.UUID, tool string, taskID uuid.UUID, ttl time.Duration, by string) (Grant, error) {
	if err := checkEntry(strings.TrimSpace(tool)); err != nil {
		return Grant{}, err
	}
	g, err := s.newGrant(tenantID, agentID, tool, taskID, ttl, by)
	if err != nil {
		return Grant{}, err
	}
	if _, err := s.dir.Agent(ctx, tenantID, agentID); err != nil {
		return Grant{}, err
	}
	v, err := s.store.CreateGrant(ctx, &g)
	if err != nil {
		return Grant{}, err
	}
	s.publish(ctx, tenantID, agentID, v)
	return g, nil
}

// Revoke ends a live grant and announces it.
func (s *Service) Revoke(ctx context.Context, tenantID, grantID uuid.UUID, by string) (Grant, error) {
	g, v, err := s.store.Revoke(ctx, tenantID, grantID, by)
	if err != nil {
		return Grant{}, err
	}
	s.publish(ctx, tenantID, g.AgentID, v)
	return g, nil
}

// EndTask ends the grants of a task that reached a terminal state, and
// announces each affected agent.
func (s *Service) EndTask(ctx context.Context, tenantID, taskID uuid.UUID) error {
	ended, err := s.store.EndTask(ctx, tenantID, taskID)
	if err != nil {
		return err
	}
	for _, e := range ended {
		s.publish(ctx, e.TenantID, e.AgentID, e.Version)
	}
	return nil
}

// ExpireDue ends the grants whose time is up, in every tenant, and
// announces them. The Expirer calls it on a timer.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	ended, err := s.store.ExpireDue(ctx, s.now())
	if err != nil {
		return 0, err
	}
	for _, e := range ended {
		s.publish(ctx, e.TenantID, e.AgentID, e.Version)
	}
	return len(ended), nil
}

// newGrant builds a grant; an empty tool is filled from the request later.
func (s *Service) newGrant(tenantID, agentID uuid.UUID, tool string, taskID uuid.UUID, ttl time.Duration, by string) (Grant, error) {
	g := Grant{ID: uuid.New(), TenantID: tenantID, AgentID: agentID, Tool: strings.TrimSpace(tool), TaskID: taskID, GrantedBy: by}
	if ttl < 0 || ttl > MaxTTL {
		return g, fault.New(fault.Invalid, "ttl must be between 0 (no expiry) and %d seconds", int(MaxTTL.Seconds()))
	}
	if ttl > 0 {
		exp := s.now().Add(ttl)
		g.ExpiresAt = &exp
	}
	if g.Tool != "" {
		return g, checkEntry(g.Tool)
	}
	return g, nil
}

func (s *Service) server(ctx context.Context, tenantID uuid.UUID) (string, error) {
	t, err := s.dir.Tenant(ctx, tenantID)
	return t.Settings.ServerName, err
}

func (s *Service) matchesAny(entries []string, tool, server string) bool {
	for _, e := range entries {
		if s.match(e, tool, server) {
			return true
		}
	}
	return false
}

func (s *Service) publish(ctx context.Context, tenantID, agentID uuid.UUID, v int64) {
	e := changes.Event{TenantID: tenantID, Kind: changes.GrantChanged, AgentID: agentID, Version: v}
	if err := s.pub.Publish(ctx, e); err != nil {
		s.log.WarnContext(ctx, "publish grant change", "tenant", tenantID, "err", err)
	}
}

// checkEntry accepts a tool name or allowed_tools-style entry.
func checkEntry(tool string) error {
	if tool == "" || len(tool) > 200 || strings.IndexFunc(tool, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fault.New(fault.Invalid, "tool must be a tool name or allowed_tools entry of 1-200 bytes without spaces")
	}
	return nil
}
