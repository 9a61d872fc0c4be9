package upstreams

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Register declares the four entry points (catalog.Family). Search,
// inspect and call are open to every caller the policy lets through;
// each upstream tool is then decided on its own full name. mcp_manage is
// for AI employees whose settings hold [capabilities] mcp_manage.
func (s *Service) Register(reg *tools.Registry) {
	open := true
	str := func(name, desc string, req bool) tools.Param {
		return tools.Param{Name: name, Type: "string", Required: req, Description: desc}
	}
	name := str("name", "The tool as <server>:<tool>, from mcp_tool_search.", true)
	reg.Register(tools.Tool{Name: "mcp_tool_search", Scope: identity.ScopeToolsWrite, Family: "mcp", StringScalars: true,
		Description: "Search the tools of this tenant's upstream MCP servers you may call: short summaries, best match first.",
		Params: []tools.Param{str("server", "Only this server's tools.", false),
			str("query", "Words to match in tool names and descriptions (any language); empty lists all.", false),
			{Name: "limit", Type: "integer", Description: fmt.Sprintf("At most this many results, 1-%d (default %d).", MaxSearchLimit, DefaultSearchLimit)}},
		Annotations: tools.Annotations{Title: "Search upstream MCP tools", ReadOnly: true, Idempotent: true}, Handler: s.searchTool})
	reg.Register(tools.Tool{Name: "mcp_tool_inspect", Scope: identity.ScopeToolsWrite, Family: "mcp",
		Description: "Read one upstream MCP tool's full description and its input and output schemas before calling it.",
		Params:      []tools.Param{name},
		Annotations: tools.Annotations{Title: "Inspect an upstream MCP tool", ReadOnly: true, Idempotent: true}, Handler: s.inspectTool})
	reg.Register(tools.Tool{Name: "mcp_tool_call", Scope: identity.ScopeToolsWrite, Family: "mcp",
		Description: "Call an upstream MCP tool with arguments matching its inspected input schema; its result comes back as the server sent it, text fenced.",
		Params:      []tools.Param{name, {Name: "arguments", Type: "object", Description: "The tool's arguments, as its input schema describes."}},
		Annotations: tools.Annotations{Title: "Call an upstream MCP tool", OpenWorld: &open}, Handler: s.callTool, ArgsNote: callNote})
	reg.Register(tools.Tool{Name: "mcp_manage", Scope: identity.ScopeToolsAdmin, Family: "mcp", Gate: tools.GateMCPManage, ProcessAgent: true,
		Description: "Manage upstream MCP servers: list, inspect, add, enable, disable, refresh, remove, env_set, env_unset, env_list.",
		Params:      manageParams(),
		Annotations: tools.Annotations{Title: "Manage upstream MCP servers", OpenWorld: &open}, Handler: s.manageTool})
}

func (s *Service) searchTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	server, _ := tools.String(c.Args, "server")
	query, _ := tools.String(c.Args, "query")
	limit, _ := tools.Int(c.Args, "limit")
	hits, total, err := s.Search(ctx, c.Subject, server, query, int(limit))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "%s — %s\n", h.Name, h.Summary)
	}
	body, flags := fenceText("search", b.String())
	text := fmt.Sprintf("%d of %d matching upstream tool(s). Inspect one with mcp_tool_inspect before calling it.\n%s", len(hits), total, body)
	if total == 0 {
		text = "No upstream tool you may call matches. Servers may be disabled, or your settings may not allow their tools."
	}
	return &tools.Result{Text: text, Note: map[string]any{"results": len(hits)},
		Structured: map[string]any{"tools": hits, "total": total, "injection_flags": flags}}, nil
}

func (s *Service) inspectTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	ref, _ := tools.String(c.Args, "name")
	t, err := s.Inspect(ctx, c.Subject, ref)
	if err != nil {
		return nil, err
	}
	raw, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, err
	}
	body, flags := fenceText(t.Server, string(raw))
	return &tools.Result{Text: fmt.Sprintf("%s:%s\n%s", t.Server, t.Name, body), Note: map[string]any{"server": t.Server, "upstream_tool": t.Name},
		Structured: map[string]any{"name": t.Server + ":" + t.Name, "tool": t, "injection_flags": flags}}, nil
}

func (s *Service) callTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	ref, _ := tools.String(c.Args, "name")
	args, _ := c.Args["arguments"].(map[string]any)
	out, err := s.Call(ctx, c.Subject, ref, args)
	note := map[string]any{"server": out.Server, "upstream_tool": out.Tool, "duration_ms": out.Elapsed.Milliseconds()}
	if err != nil {
		return nil, &tools.NotedError{Note: note, Err: err}
	}
	note["is_error"], note["injection_flags"] = out.Result.IsError, out.Flags
	r := &tools.Result{Content: out.Result.Content, IsError: out.Result.IsError, Note: note,
		Text: fmt.Sprintf("%s:%s answered (isError %t).", out.Server, out.Tool, out.Result.IsError)}
	if len(out.Result.Structured) > 0 {
		r.Structured = out.Result.Structured
	}
	if len(r.Content) == 0 {
		r.Content = json.RawMessage(`[]`)
	}
	return r, nil
}

// callNote is what an mcp_tool_call's audit row keeps before the call
// runs: the server and tool its name names.
func callNote(args map[string]any) map[string]any {
	ref, _ := tools.String(args, "name")
	server, tool, err := ParseName(ref)
	if err != nil {
		return nil
	}
	return map[string]any{"server": server, "upstream_tool": tool}
}

// fenceText fences text another party wrote (summaries, descriptions,
// schemas) as an upstream result is, and returns its flags.
func fenceText(source, text string) (string, []string) {
	raw, _ := json.Marshal([]map[string]any{{"type": "text", "text": text}})
	res, flags, err := fence(source, "", Result{Content: raw})
	if err != nil {
		return "", flags
	}
	var blocks []struct{ Text string }
	if json.Unmarshal(res.Content, &blocks) != nil || len(blocks) != 1 {
		return "", flags
	}
	return blocks[0].Text, flags
}

// toolErr is a fault the model can act on, for mcp_manage's own checks.
func toolErr(format string, args ...any) error { return fault.New(fault.Invalid, format, args...) }
