package tools

// UpstreamPrefix begins the name the policy gives every upstream MCP
// server's tool: mcp__<server>__<tool>. No Visor tool's name can begin
// with it (names are snake_case, with no "__").
const UpstreamPrefix = "mcp__"

// DecideUpstream is the policy for one upstream tool, by its full name
// mcp__<server>__<tool>, reached through an mcp_tool_* entry point the
// policy already allowed the subject. An AI employee's denied_tools,
// allowed_tools and scoped_tools (with its live grants) apply to the full
// name as they do to a Visor tool's (Match); every other caller is bound
// by the entry point alone. A refusal is Hidden: search leaves the tool
// out and a call is refused as a hidden Visor tool's is.
func DecideUpstream(s *Subject, full string) Decision {
	if s.Agent == nil {
		return allow
	}
	if d, ok := s.lists(&Tool{Name: full}, []string{full}); !ok {
		return d
	}
	return allow
}
