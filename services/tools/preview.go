package tools

import (
	"context"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// SettingsPreview is what an AI employee sees now and what it would see
// with other settings, by the one policy (Registry.Visible).
type SettingsPreview struct {
	Now, After []string // tool names, in the registry's order
}

// Added returns the tools After has and Now lacks.
func (p SettingsPreview) Added() []string { return minus(p.After, p.Now) }

// Removed returns the tools Now has and After lacks.
func (p SettingsPreview) Removed() []string { return minus(p.Now, p.After) }

// Kept returns the tools both lists hold.
func (p SettingsPreview) Kept() []string { return minus(p.Now, p.Removed()) }

func minus(a, b []string) []string {
	drop := make(map[string]bool, len(b))
	for _, n := range b {
		drop[n] = true
	}
	var out []string
	for _, n := range a {
		if !drop[n] {
			out = append(out, n)
		}
	}
	return out
}

// PreviewSettings returns the tools employee principal p (its tenant,
// agent and scopes) sees now, read fresh from storage, and the tools it
// would see were its agent's settings next, with everything else — the
// tenant's settings and integrations, its live task-scoped grants —
// unchanged. A trashed or missing agent sees nothing now.
func (r *Registry) PreviewSettings(ctx context.Context, subjects *Subjects, p identity.Principal, next identity.AgentSettings) (SettingsPreview, error) {
	sub, err := subjects.Fresh(ctx, p)
	if fault.Is(err, fault.Unauthorized) {
		return SettingsPreview{}, nil
	}
	if err != nil {
		return SettingsPreview{}, err
	}
	out := SettingsPreview{Now: names(r.Visible(sub))}
	after := *sub
	a := *sub.Agent
	a.Settings = next
	after.Agent = &a
	if len(next.Capabilities.ScopedTools) > 0 && len(sub.Grants) == 0 && len(sub.Agent.Settings.Capabilities.ScopedTools) == 0 {
		// The current settings list no scoped tools, so their grants were
		// not read.
		if after.Grants, err = subjects.grants.LiveGrants(ctx, p.TenantID, p.AgentID); err != nil {
			return SettingsPreview{}, err
		}
	}
	out.After = names(r.Visible(&after))
	return out, nil
}

func names(ts []*Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}
