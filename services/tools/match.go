package tools

import "strings"

// DefaultServerName is the name a tenant's clients give Visor when the
// tenant has not set TenantSettings.ServerName.
const DefaultServerName = "visor"

// Match reports whether one allow/deny/scoped_tools entry names tool, for a
// tenant whose clients call Visor server. The rules (docs/tools.md,
// "Matching rules"):
//
//   - an entry matches the tool's name exactly;
//   - a trailing "*" is an anchored prefix ("memory_*", and "*" alone names
//     every tool);
//   - "mcp__<server>__" in front is stripped when <server> is Visor's name,
//     so "mcp__visor__*" names every Visor tool and "mcp__visor__odoo_*" the
//     odoo_ ones; "mcp__<other>__…" never names a Visor tool;
//   - a "*" anywhere else is a literal character;
//   - an upstream tool (tool is mcp__<server>__<name>) is named only by an
//     entry that begins with "mcp__" (exactly, or by a trailing "*") and
//     by "*" alone.
func Match(entry, tool, server string) bool {
	if strings.HasPrefix(tool, UpstreamPrefix) {
		return matchUpstream(entry, tool)
	}
	if server == "" {
		server = DefaultServerName
	}
	if rest, ok := strings.CutPrefix(entry, "mcp__"+server+"__"); ok {
		entry = rest
	} else if strings.HasPrefix(entry, "mcp__") {
		return false
	}
	if prefix, ok := strings.CutSuffix(entry, "*"); ok {
		return strings.HasPrefix(tool, prefix)
	}
	return entry == tool
}

// matchAny returns the first entry of list that names one of names.
func matchAny(list []string, server string, names ...string) (string, bool) {
	for _, e := range list {
		for _, n := range names {
			if n != "" && Match(e, n, server) {
				return e, true
			}
		}
	}
	return "", false
}

// matchUpstream is Match for an upstream tool's full name.
func matchUpstream(entry, full string) bool {
	if entry == "*" {
		return true
	}
	if !strings.HasPrefix(entry, UpstreamPrefix) {
		return false
	}
	if prefix, ok := strings.CutSuffix(entry, "*"); ok {
		return strings.HasPrefix(full, prefix)
	}
	return entry == full
}
