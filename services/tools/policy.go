package tools

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// DefaultExternalWhitelist is the documented default of the tools an
// external OAuth client sees without an explicit scope grant; a tenant
// replaces it with
// TenantSettings.ExternalWhitelist. See docs/tools.md.
var DefaultExternalWhitelist = []string{
	"agent_status", "tasks_list", "tasks_create", "tasks_update", "activity_post", "memory_search", "wiki_read",
}

// Subject is everything the policy reads about a caller: the principal, its
// tenant's settings, its AI employee (employees only) and that employee's
// live task-scoped grants.
type Subject struct {
	Principal identity.Principal
	Tenant    identity.Tenant
	Agent     *identity.Agent // nil unless the principal is an employee
	Grants    []string        // tool names (or patterns) with a live grant
	// PolicyVersion is the tenant's policy version read just before the
	// tenant row; every committed change that can alter a decision bumps
	// it. -1 when the directory does not report versions.
	PolicyVersion int64
}

func (s *Subject) server() string {
	if s.Tenant.Settings.ServerName != "" {
		return s.Tenant.Settings.ServerName
	}
	return DefaultServerName
}

func (s *Subject) whitelist() []string {
	if s.Tenant.Settings.ExternalWhitelist != nil {
		return s.Tenant.Settings.ExternalWhitelist
	}
	return DefaultExternalWhitelist
}

// Decide is THE policy: whether the subject may see and call t with args
// (nil when listing). tools/list shows exactly the tools whose decision is
// Visible and tools/call runs exactly those whose decision is Allowed, so a
// hidden tool called by name is refused with its gate's own message.
//
// The rows, in order: the external-client whitelist, the scope minimum
// (every credential's scopes bind it, AI employees' keys and round tokens
// included), process-agent tools, tenant and agent gates,
// denied_tools/allowed_tools, scoped_tools without a live grant, and last
// the listed-but-refused [permissions] flags.
func (r *Registry) Decide(s *Subject, t *Tool, args map[string]any) Decision {
	names := []string{t.Name}
	if t.DeprecatedFor != "" {
		if target, ok := r.Get(t.DeprecatedFor); ok {
			t = target
			names = append(names, t.Name)
		}
	}
	p := s.Principal
	if p.Kind == identity.KindExternal {
		// tools:read is every client's base scope; the whitelist is what it
		// shows. A scope granted beyond it shows the tools it is the minimum of.
		listed := slices.ContainsFunc(names, func(n string) bool { return slices.Contains(s.whitelist(), n) }) ||
			(t.Scope != identity.ScopeToolsRead && slices.Contains(p.Scopes, t.Scope))
		if !listed {
			d := hide(EventScopeDenied, fmt.Sprintf("%s is not on this tenant's external-client whitelist and no scope granted to this client covers it (needs %s)", names[0], t.Scope))
			d.NeedScope = t.Scope
			return d
		}
	}
	if !p.HasScope(t.Scope) {
		d := hide(EventScopeDenied, fmt.Sprintf("%s needs the %s scope, which this credential does not hold", names[0], t.Scope))
		d.NeedScope = t.Scope
		return d
	}
	if t.ProcessAgent && !p.IsEmployee() {
		return hide(EventCapabilityDenied, fmt.Sprintf("%s acts for the calling AI employee's own process; this caller is not an AI employee", names[0]))
	}
	if d, ok := s.gate(t, names[0]); !ok {
		return d
	}
	if s.Agent != nil {
		if d, ok := s.lists(t, names); !ok {
			return d
		}
		if d, ok := s.permission(t, args, names[0]); !ok {
			return d
		}
	}
	return allow
}

func (s *Subject) gate(t *Tool, name string) (Decision, bool) {
	rule, ok := gateRules[t.Gate]
	if !ok {
		return allow, true
	}
	on := false
	switch {
	case rule.tenant != nil:
		on = rule.tenant(s.Tenant.Settings, s.Principal)
	case s.Agent != nil:
		on = rule.agent(s.Agent.Settings)
	}
	if on {
		return allow, true
	}
	return hide(EventCapabilityDenied, fmt.Sprintf("%s is unavailable: %s", name, rule.off)), false
}

// lists applies the agent's denied_tools, allowed_tools and scoped_tools.
func (s *Subject) lists(t *Tool, names []string) (Decision, bool) {
	c := s.Agent.Settings.Capabilities
	srv := s.server()
	if e, ok := matchAny(c.DeniedTools, srv, names...); ok {
		return hide(EventCapabilityDenied, fmt.Sprintf("%s is refused by this AI employee's denied_tools entry %q", names[0], e)), false
	}
	if len(c.AllowedTools) > 0 {
		if _, ok := matchAny(c.AllowedTools, srv, names...); !ok {
			return hide(EventCapabilityDenied, fmt.Sprintf("%s is not in this AI employee's allowed_tools", names[0])), false
		}
	}
	if _, scoped := matchAny(c.ScopedTools, srv, names...); scoped {
		if _, granted := matchAny(s.Grants, srv, names...); !granted {
			return hide(EventCapabilityDenied, fmt.Sprintf("%s is a scoped tool and needs a live task-scoped grant (capability_request)", names[0])), false
		}
	}
	return allow, true
}

// permission applies the listed-but-refused [permissions] flags: absent
// settings allow, unreadable ones refuse, an explicit false refuses.
func (s *Subject) permission(t *Tool, args map[string]any, name string) (Decision, bool) {
	if t.Permission == PermNone || (t.PermissionIf != nil && !t.PermissionIf(args)) {
		return allow, true
	}
	perms := s.Agent.Settings.Permissions
	switch {
	case perms == nil:
		return allow, true
	case perms.Unreadable:
		return Refuse(EventPermissionDenied, fmt.Sprintf("%s is refused: this AI employee's [permissions] settings exist but cannot be read", name)), false
	}
	if v := t.Permission.flag(perms); v != nil && !*v {
		return Refuse(EventPermissionDenied, fmt.Sprintf("%s is refused: [permissions] %s is false for this AI employee", name, t.Permission)), false
	}
	return allow, true
}

// Visible returns the tools s can see, in the registry's stable order.
func (r *Registry) Visible(s *Subject) []*Tool {
	out := make([]*Tool, 0, len(r.ordered))
	for _, t := range r.ordered {
		if r.Decide(s, t, nil).Visible() {
			out = append(out, t)
		}
	}
	return out
}

// Grants reads task-scoped grants. The live engineer's grant storage
// implements it; NoGrants is the default.
type Grants interface {
	// LiveGrants returns the tool names (or allow-list patterns) agentID
	// holds a live grant for right now.
	LiveGrants(ctx context.Context, tenantID, agentID uuid.UUID) ([]string, error)
}

// NoGrants holds no grants: every scoped tool stays hidden.
type NoGrants struct{}

// LiveGrants returns nothing.
func (NoGrants) LiveGrants(context.Context, uuid.UUID, uuid.UUID) ([]string, error) { return nil, nil }
