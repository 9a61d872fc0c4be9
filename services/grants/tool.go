package grants

import (
	"context"
	"fmt"
	"strings"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Register declares the family's tool (catalog.Family): capability_request,
// with which an AI employee asks for one of its scoped tools. The name must come from somewhere other than
// tools/list (a scoped tool is hidden until granted): the employee's
// instructions, a playbook, or the error of a refused call.
func (svc *Service) Register(reg *tools.Registry) {
	reg.Register(tools.Tool{
		Name:        "capability_request",
		Description: "Ask an operator to grant one of your scoped tools (hidden until granted). When approved you get tools/list_changed and the tool appears.",
		Params: []tools.Param{
			{Name: "tool", Type: "string", Required: true, Description: "Exact name of the scoped tool you need."},
			{Name: "reason", Type: "string", Required: true, Description: "Why you need it, for the operator who decides (1-2000 bytes)."},
		},
		Scope:        identity.ScopeToolsWrite,
		Family:       "capability",
		ProcessAgent: true,
		Annotations:  tools.Annotations{Title: "Request a scoped tool"},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			tool, _ := c.Args["tool"].(string)
			reason, _ := c.Args["reason"].(string)
			r, err := svc.Ask(ctx, c.Principal(), tool, reason)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("Request %s for %s is pending an operator's decision. If it is approved you will receive tools/list_changed and %s will appear in tools/list.",
				r.ID, r.Tool, r.Tool)
			if upstreamTool(r.Tool, c.Subject) {
				// Upstream tools are never listed: a grant makes one found.
				text = fmt.Sprintf("Request %s for %s is pending an operator's decision. If it is approved, mcp_tool_search will find %s and mcp_tool_call will call it.",
					r.ID, r.Tool, r.Tool)
			}
			return &tools.Result{
				Text:       text,
				Structured: map[string]any{"request_id": r.ID, "tool": r.Tool, "status": r.Status},
			}, nil
		},
	})
}

// upstreamTool reports whether tool names an upstream MCP server's tool
// (mcp__<server>__<tool> for a server other than Visor's own name).
func upstreamTool(tool string, sub *tools.Subject) bool {
	own := tools.DefaultServerName
	if sub != nil && sub.Tenant.Settings.ServerName != "" {
		own = sub.Tenant.Settings.ServerName
	}
	return strings.HasPrefix(tool, tools.UpstreamPrefix) && !strings.HasPrefix(tool, tools.UpstreamPrefix+own+"__")
}
