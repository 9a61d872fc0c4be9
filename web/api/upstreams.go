package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/upstreams"
)

// Upstreams is the admin API of a tenant's upstream MCP servers. Secrets
// (headers, environment values) are write-only: answers name them and
// say they are set. Add it with API.Add.
type Upstreams struct{ svc *upstreams.Service }

// NewUpstreams returns the upstream servers resource.
func NewUpstreams(svc *upstreams.Service) Upstreams { return Upstreams{svc: svc} }

// UpstreamInput is the body of POST /tenants/{tenant}/mcp-servers and of
// PATCH …/mcp-servers/{server}. On a PATCH absent fields keep their values
// and the name cannot change.
type UpstreamInput struct {
	Name string `json:"name,omitempty"`
	// Transport is streamable_http (the default), sse or stdio.
	Transport  string          `json:"transport,omitempty"`
	URL        string          `json:"url,omitempty"`
	Image      string          `json:"image,omitempty"`
	Command    []string        `json:"command,omitempty"`
	AllowHosts []string        `json:"allow_hosts,omitempty"`
	Auth       *upstreams.Auth `json:"auth,omitempty"`
	// Enabled, when false, saves the server switched off.
	Enabled        *bool   `json:"enabled,omitempty"`
	TimeoutMS      int64   `json:"timeout_ms,omitempty"`
	MaxConcurrent  int     `json:"max_concurrent,omitempty"`
	MaxResultBytes int     `json:"max_result_bytes,omitempty"`
	Description    *string `json:"description,omitempty"`
}

// UpstreamSecretInput is the body of PUT …/mcp-servers/{server}/secrets:
// one secret, sealed at rest and never returned.
type UpstreamSecretInput struct {
	// Kind is env (a stdio server's environment variable) or header (a
	// remote server's; a static bearer is Authorization: Bearer …).
	Kind string `json:"kind"`
	Name string `json:"name"`
	// SecretValue is the value; operator audit rows mask it.
	SecretValue string `json:"secret_value"`
}

// UpstreamList is the body of GET /tenants/{tenant}/mcp-servers: one page
// of servers by name, and the cursor of the next when there may be more.
type UpstreamList struct {
	Servers    []upstreams.Server `json:"servers"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// Operations lists the upstream server routes.
func (r Upstreams) Operations() []Operation {
	const tag = "mcp-servers"
	base := "/tenants/:tenant/mcp-servers"
	one := base + "/:server"
	return []Operation{
		{Method: http.MethodGet, Path: base, ID: "listMCPServers", Tag: tag, Needs: identity.ReadTenant,
			Summary: "List the tenant's upstream MCP servers (secrets are named, never returned)", Response: UpstreamList{}, Handler: r.list, Query: Paged()},
		{Method: http.MethodPost, Path: base, ID: "createMCPServer", Errors: []int{http.StatusConflict}, Tag: tag, Needs: identity.ManageSettings,
			Summary: "Add an upstream MCP server (its URL through the outbound guard) and list its tools", Request: UpstreamInput{},
			Response: upstreams.Server{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodGet, Path: one, ID: "getMCPServer", Tag: tag, Needs: identity.ReadTenant,
			Summary: "Get an upstream MCP server by id or name", Response: upstreams.Server{}, Handler: r.get},
		{Method: http.MethodPatch, Path: one, ID: "updateMCPServer", Tag: tag, Needs: identity.ManageSettings,
			Summary: "Change an upstream MCP server (absent fields stay) and list its tools again", Request: UpstreamInput{},
			Response: upstreams.Server{}, Handler: r.update},
		{Method: http.MethodPost, Path: one + "/refresh", ID: "refreshMCPServer", Errors: []int{http.StatusConflict}, Tag: tag, Needs: identity.ManageSettings,
			Summary: "List an upstream MCP server's tools again", Response: upstreams.Server{}, Handler: r.refresh},
		{Method: http.MethodPut, Path: one + "/secrets", ID: "setMCPServerSecret", Errors: []int{http.StatusConflict}, Tag: tag, Needs: identity.ManageSettings,
			Summary: "Set one secret of an upstream MCP server (a header or an environment variable), sealed at rest",
			Request: UpstreamSecretInput{}, Response: upstreams.Server{}, Handler: r.setSecret},
		{Method: http.MethodDelete, Path: one + "/secrets/:secret_kind/:secret", ID: "deleteMCPServerSecret", Tag: tag, Needs: identity.ManageSettings,
			Summary: "Remove one secret of an upstream MCP server", Response: upstreams.Server{}, Handler: r.deleteSecret},
		{Method: http.MethodDelete, Path: one, ID: "deleteMCPServer", Tag: tag, Needs: identity.ManageSettings,
			Summary:  "Remove an upstream MCP server: its tools leave search and are refused at once; tokens Visor held are revoked",
			Response: upstreams.Server{}, Handler: r.remove},
	}
}

func (r Upstreams) list(c echo.Context) error {
	all, err := r.svc.List(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	servers, next, err := pageBy(c, all, func(s upstreams.Server) string { return s.Name })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, UpstreamList{Servers: nonNil(servers), NextCursor: next})
}

func (r Upstreams) get(c echo.Context) error {
	s, err := r.svc.Server(c.Request().Context(), tenant(c).ID, c.Param("server"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r Upstreams) create(c echo.Context) error {
	var in UpstreamInput
	if err := decode(c, &in); err != nil {
		return err
	}
	s, err := r.svc.Create(c.Request().Context(), tenant(c).ID, in.merge(upstreams.Server{}), principal(c).ID())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s)
}

func (r Upstreams) update(c echo.Context) error {
	ctx := c.Request().Context()
	old, err := r.svc.Server(ctx, tenant(c).ID, c.Param("server"))
	if err != nil {
		return err
	}
	var in UpstreamInput
	if err := decode(c, &in); err != nil {
		return err
	}
	s, err := r.svc.Update(ctx, tenant(c).ID, old.ID.String(), in.merge(old))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r Upstreams) refresh(c echo.Context) error {
	s, err := r.svc.Refresh(c.Request().Context(), tenant(c).ID, c.Param("server"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r Upstreams) setSecret(c echo.Context) error {
	var in UpstreamSecretInput
	if err := decode(c, &in); err != nil {
		return err
	}
	s, err := r.svc.SetSecret(c.Request().Context(), tenant(c).ID, c.Param("server"), upstreams.SecretKind(in.Kind), in.Name, in.SecretValue)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r Upstreams) deleteSecret(c echo.Context) error {
	s, err := r.svc.UnsetSecret(c.Request().Context(), tenant(c).ID, c.Param("server"), upstreams.SecretKind(c.Param("secret_kind")), c.Param("secret"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r Upstreams) remove(c echo.Context) error {
	s, err := r.svc.Remove(c.Request().Context(), tenant(c).ID, c.Param("server"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

// merge returns the service's input: in's fields over old's.
func (in UpstreamInput) merge(old upstreams.Server) upstreams.Input {
	out := upstreams.Input{Name: in.Name, Transport: old.Transport, URL: old.URL, Image: old.Image, Command: old.Command,
		AllowHosts: old.AllowHosts, Auth: old.Auth, Limits: old.Limits, Description: old.Description, Disabled: old.ID != [16]byte{} && !old.Enabled}
	if in.Transport != "" {
		out.Transport = upstreams.Transport(in.Transport)
	} else if out.Transport == "" {
		out.Transport = upstreams.StreamableHTTP
	}
	if in.URL != "" {
		out.URL = in.URL
	}
	if in.Image != "" {
		out.Image = in.Image
	}
	if in.Command != nil {
		out.Command = in.Command
	}
	if in.AllowHosts != nil {
		out.AllowHosts = in.AllowHosts
	}
	if in.Auth != nil {
		out.Auth = *in.Auth
	}
	if in.Enabled != nil {
		out.Disabled = !*in.Enabled
	}
	if in.Description != nil {
		out.Description = *in.Description
	}
	if in.TimeoutMS != 0 {
		out.Limits.Timeout = time.Duration(in.TimeoutMS) * time.Millisecond
	}
	if in.MaxConcurrent != 0 {
		out.Limits.MaxConcurrent = in.MaxConcurrent
	}
	if in.MaxResultBytes != 0 {
		out.Limits.MaxResultBytes = in.MaxResultBytes
	}
	return out
}
