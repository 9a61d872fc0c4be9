package upstreams

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/tools"
)

// manageActions are mcp_manage's actions.
var manageActions = []string{"list", "inspect", "add", "enable", "disable", "refresh", "remove", "env_set", "env_unset", "env_list"}

func manageParams() []tools.Param {
	str := func(name, desc string) tools.Param { return tools.Param{Name: name, Type: "string", Description: desc} }
	list := func(name, desc string) tools.Param { return tools.Param{Name: name, Type: "array", Description: desc} }
	return []tools.Param{
		{Name: "action", Type: "string", Required: true, Description: "One of list, inspect, add, enable, disable, refresh, remove, env_set, env_unset, env_list."},
		str("server", "The server's name (every action but list)."),
		str("transport", "For add: streamable_http (default), sse or stdio."),
		str("url", "For add of a remote server: its https endpoint."),
		str("image", "For add of a stdio server: an image on the tenant's list of stdio images (settings.mcp_stdio_images) and the stdio workers' allow list (never pulled)."),
		list("command", "For add of a stdio server: the command and its arguments."),
		list("allow_hosts", "For add of a stdio server: the only hosts it may reach (none: no network)."),
		str("description", "For add: a note for operators, at most 500 bytes."),
		str("kind", "For env_*: env (a stdio server's variable, the default) or header (a remote server's, e.g. Authorization)."),
		str("variable", "For env_set and env_unset: the variable or header name."),
		{Name: "value", Type: "string", Secret: true, Description: "For env_set: the value, stored encrypted and never shown again."},
	}
}

func (s *Service) manageTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	action, _ := tools.String(c.Args, "action")
	server, _ := tools.String(c.Args, "server")
	tenant := c.Principal().TenantID
	note := map[string]any{"action": action, "server": server}
	if !slices.Contains(manageActions, action) {
		return nil, toolErr("action must be one of %v", manageActions)
	}
	if action != "list" && server == "" {
		return nil, toolErr("%s needs server", action)
	}
	var srv Server
	var err error
	switch action {
	case "list":
		list, err := s.List(ctx, tenant)
		if err != nil {
			return nil, err
		}
		return &tools.Result{Text: fmt.Sprintf("%d upstream server(s).", len(list)), Note: note, Structured: map[string]any{"servers": list}}, nil
	case "inspect", "env_list":
		srv, err = s.Server(ctx, tenant, server)
	case "add":
		srv, err = s.Create(ctx, tenant, manageInput(c.Args), c.Principal().ID())
	case "enable", "disable":
		srv, err = s.SetEnabled(ctx, tenant, server, action == "enable")
	case "refresh":
		srv, err = s.Refresh(ctx, tenant, server)
	case "remove":
		srv, err = s.Remove(ctx, tenant, server)
	case "env_set", "env_unset":
		srv, err = s.manageSecret(ctx, c, tenant, server, action == "env_set")
	}
	if err != nil {
		return nil, &tools.NotedError{Note: note, Err: err}
	}
	if action == "env_list" {
		return &tools.Result{Text: fmt.Sprintf("%d secret(s) of %s; values are never shown.", len(srv.Secrets), srv.Name), Note: note,
			Structured: map[string]any{"server": srv.Name, "secrets": srv.Secrets}}, nil
	}
	text := fmt.Sprintf("%s: %s (enabled %t, %d tools).", action, srv.Name, srv.Enabled, srv.ToolCount)
	if srv.LastError != "" && action != "remove" {
		text += " Last refresh failed: " + srv.LastError
	}
	return &tools.Result{Text: text, Note: note, Structured: map[string]any{"server": srv}}, nil
}

func (s *Service) manageSecret(ctx context.Context, c tools.Call, tenant uuid.UUID, server string, set bool) (Server, error) {
	variable, _ := tools.String(c.Args, "variable")
	kind, _ := tools.String(c.Args, "kind")
	if kind == "" {
		srv, err := s.Server(ctx, tenant, server)
		if err != nil {
			return Server{}, err
		}
		kind = string(SecretEnv)
		if srv.Transport.Remote() {
			kind = string(SecretHeader)
		}
	}
	if kind != string(SecretEnv) && kind != string(SecretHeader) {
		return Server{}, toolErr("kind must be env or header")
	}
	if !set {
		return s.UnsetSecret(ctx, tenant, server, SecretKind(kind), variable)
	}
	value, ok := tools.String(c.Args, "value")
	if !ok {
		return Server{}, toolErr("env_set needs value")
	}
	return s.SetSecret(ctx, tenant, server, SecretKind(kind), variable, value)
}

// manageInput reads add's arguments.
func manageInput(args map[string]any) Input {
	str := func(k string) string { v, _ := tools.String(args, k); return v }
	strs := func(k string) []string {
		var out []string
		l, _ := args[k].([]any)
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			} else {
				out = append(out, "") // refused by the checks as empty
			}
		}
		return out
	}
	tr := Transport(str("transport"))
	if tr == "" {
		tr = StreamableHTTP
	}
	return Input{Name: str("server"), Transport: tr, URL: str("url"), Image: str("image"), Command: strs("command"),
		AllowHosts: strs("allow_hosts"), Description: str("description"), Limits: Limits{Timeout: DefaultLimits.Timeout}}
}
