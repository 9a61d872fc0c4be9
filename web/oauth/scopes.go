package oauth

import (
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// describeScopes lists scopes for tenant t, each with the tools whose minimum scope it is, among those the client will see
// (tools.Registry.ClientTools). A tool is named once, under its own scope.
func (s *Server) describeScopes(t identity.Tenant, scopes []string) []ScopeLine {
	var seen []*tools.Tool
	if s.cfg.Tools != nil {
		seen = s.cfg.Tools.ClientTools(t, scopes)
	}
	out := make([]ScopeLine, 0, len(scopes))
	for _, sc := range scopes {
		line := ScopeLine{Name: sc}
		for _, tl := range seen {
			if tl.Scope == sc {
				line.Tools = append(line.Tools, tl.Name)
			}
		}
		out = append(out, line)
	}
	return out
}
