package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/upstreams"
)

// The upstream MCP servers page: the tenant's servers with their state,
// the add form, enable, disable, refresh, remove, secrets named and set or
// unset (never shown), and Connect or Disconnect for servers that need a
// person's consent upstream (the OAuth authorization code flow).
func (d *Dashboard) upstreamRoutes(e *echo.Echo, g *echo.Group, tenant echo.MiddlewareFunc) {
	// Visor's Client ID Metadata Document for the tenant: its URL is the
	// client id an authorization server that takes such documents gets.
	e.GET("/t/:tenant/"+upstreamClientPath, d.upstreamClientDocument, tenant)
	g.GET("/mcp-servers", d.page(identity.ReadTenant, d.mcpServers))
	g.POST("/mcp-servers", d.action("createMCPServer", identity.ManageSettings, d.createMCPServer))
	g.POST("/mcp-servers/:server/enable", d.action("enableMCPServer", identity.ManageSettings, d.enableMCPServer(true)))
	g.POST("/mcp-servers/:server/disable", d.action("disableMCPServer", identity.ManageSettings, d.enableMCPServer(false)))
	g.POST("/mcp-servers/:server/refresh", d.action("refreshMCPServer", identity.ManageSettings, d.refreshMCPServer))
	g.POST("/mcp-servers/:server/remove", d.action("deleteMCPServer", identity.ManageSettings, d.removeMCPServer))
	g.POST("/mcp-servers/:server/secrets", d.action("setMCPServerSecret", identity.ManageSettings, d.setMCPServerSecret))
	g.POST("/mcp-servers/:server/secrets/unset", d.action("deleteMCPServerSecret", identity.ManageSettings, d.unsetMCPServerSecret))
	// Connect and Disconnect are any member's for a server with a token per
	// member; the service asks for manage_settings for a tenant's token.
	g.POST("/mcp-servers/:server/connect", d.action("connectMCPServer", identity.ReadTenant, d.connectMCPServer))
	g.POST("/mcp-servers/:server/disconnect", d.action("disconnectMCPServer", identity.ReadTenant, d.disconnectMCPServer))
	g.GET("/mcp-servers/callback", d.mcpServerCallback)
}

// upstreamClientPath is where each tenant's Client ID Metadata Document
// is served, under /t/{tenant}/.
const upstreamClientPath = "upstream-oauth/client"

type mcpServersData struct {
	Servers []mcpServerRow
	Form    mcpServerForm
}

type mcpServerRow struct {
	upstreams.Server
	// Connected: Visor holds the token a call by this member carries.
	Connected bool
	// MayConnect: this member may Connect or Disconnect it.
	MayConnect bool
}

// mcpServerForm is the add form as posted, for redrawing it after an error.
type mcpServerForm struct {
	Name, Transport, URL, AuthKind, ClientID, Scopes, Description string
	PerMember                                                     bool
}

func (d *Dashboard) mcpServers(c echo.Context, v *View) error {
	return d.renderMCPServers(c, v, http.StatusOK, mcpServerForm{Transport: string(upstreams.StreamableHTTP), AuthKind: string(upstreams.AuthNone)})
}

func (d *Dashboard) renderMCPServers(c echo.Context, v *View, status int, f mcpServerForm) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	ctx := c.Request().Context()
	list, err := d.d.Upstreams.List(ctx, v.Tenant.ID)
	if err != nil {
		return err
	}
	rows := make([]mcpServerRow, 0, len(list))
	for _, s := range list {
		r := mcpServerRow{Server: s}
		if s.Auth.Kind == upstreams.AuthOAuth {
			r.Connected = d.d.Upstreams.Connected(ctx, s, v.Principal)
			r.MayConnect = s.Auth.PerMember || v.Can(string(identity.ManageSettings))
		}
		rows = append(rows, r)
	}
	v.Title, v.Nav, v.Data = "mcpservers.title", "mcp-servers", mcpServersData{Servers: rows, Form: f}
	return d.f.Render(c, status, "mcpservers", v)
}

// mcpServerFormError redraws the page with what went wrong, for errors the
// member can act on; others go to the error page.
func (d *Dashboard) mcpServerFormError(c echo.Context, v *View, f mcpServerForm, err error) error {
	code := fault.CodeOf(err)
	if code != fault.Invalid && code != fault.Conflict && code != fault.Unavailable && code != fault.NotFound {
		return err
	}
	v.Error, v.ErrorDetail = v.formFailure(err)
	return d.renderMCPServers(c, v, fault.HTTPStatus(code), f)
}

func (d *Dashboard) createMCPServer(c echo.Context, v *View) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	f := mcpServerForm{Name: strings.TrimSpace(c.FormValue("name")), Transport: c.FormValue("transport"), URL: strings.TrimSpace(c.FormValue("url")),
		AuthKind: c.FormValue("auth_kind"), ClientID: strings.TrimSpace(c.FormValue("client_id")), Scopes: c.FormValue("scopes"),
		Description: c.FormValue("description"), PerMember: c.FormValue("per_member") != ""}
	in := upstreams.Input{Name: f.Name, Transport: upstreams.Transport(f.Transport), URL: f.URL, Description: f.Description,
		Auth: upstreams.Auth{Kind: upstreams.AuthKind(f.AuthKind), PerMember: f.PerMember, ClientID: f.ClientID, Scopes: strings.Fields(f.Scopes)}}
	if ms := strings.TrimSpace(c.FormValue("timeout_ms")); ms != "" {
		n, err := strconv.Atoi(ms)
		if err != nil || n <= 0 {
			return d.mcpServerFormError(c, v, f, fault.New(fault.Invalid, "timeout_ms must be a whole positive number"))
		}
		in.Limits.Timeout = time.Duration(n) * time.Millisecond
	}
	s, err := d.d.Upstreams.Create(c.Request().Context(), v.Tenant.ID, in, v.Principal.ID())
	if err != nil {
		return d.mcpServerFormError(c, v, f, err)
	}
	v.Object = "mcp_server:" + s.ID.String()
	if s.LastError != "" {
		return back(c, v, "mcp-servers", "mcp_added_unreachable")
	}
	return back(c, v, "mcp-servers", "mcp_added")
}

func (d *Dashboard) enableMCPServer(on bool) Handler {
	return func(c echo.Context, v *View) error {
		if d.d.Upstreams == nil {
			return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
		}
		s, err := d.d.Upstreams.SetEnabled(c.Request().Context(), v.Tenant.ID, c.Param("server"), on)
		if err != nil {
			return d.mcpServerFormError(c, v, mcpServerForm{}, err)
		}
		v.Object = "mcp_server:" + s.ID.String()
		if on {
			return back(c, v, "mcp-servers", "mcp_enabled")
		}
		return back(c, v, "mcp-servers", "mcp_disabled")
	}
}

func (d *Dashboard) refreshMCPServer(c echo.Context, v *View) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	s, err := d.d.Upstreams.Refresh(c.Request().Context(), v.Tenant.ID, c.Param("server"))
	if err != nil {
		return d.mcpServerFormError(c, v, mcpServerForm{}, err)
	}
	v.Object = "mcp_server:" + s.ID.String()
	return back(c, v, "mcp-servers", "mcp_refreshed")
}

func (d *Dashboard) removeMCPServer(c echo.Context, v *View) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	s, err := d.d.Upstreams.Remove(c.Request().Context(), v.Tenant.ID, c.Param("server"))
	if err != nil {
		return d.mcpServerFormError(c, v, mcpServerForm{}, err)
	}
	v.Object = "mcp_server:" + s.ID.String()
	return back(c, v, "mcp-servers", "mcp_removed")
}

func (d *Dashboard) setMCPServerSecret(c echo.Context, v *View) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	s, err := d.d.Upstreams.SetSecret(c.Request().Context(), v.Tenant.ID, c.Param("server"), upstreams.SecretKind(c.FormValue("kind")),
		strings.TrimSpace(c.FormValue("name")), c.FormValue("secret_value"))
	if err != nil {
		return d.mcpServerFormError(c, v, mcpServerForm{}, err)
	}
	v.Object = "mcp_server:" + s.ID.String()
	return back(c, v, "mcp-servers", "mcp_secret_set")
}

func (d *Dashboard) unsetMCPServerSecret(c echo.Context, v *View) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	s, err := d.d.Upstreams.UnsetSecret(c.Request().Context(), v.Tenant.ID, c.Param("server"), upstreams.SecretKind(c.FormValue("kind")), c.FormValue("name"))
	if err != nil {
		return d.mcpServerFormError(c, v, mcpServerForm{}, err)
	}
	v.Object = "mcp_server:" + s.ID.String()
	return back(c, v, "mcp-servers", "mcp_secret_unset")
}

// connectData is the page between Connect and the upstream's consent: it
// names where the member is going, and links there (a link, not a form's
// redirect, so the page's form-action policy stays this server alone).
type connectData struct {
	Server, Origin, URL string
}

func (d *Dashboard) connectMCPServer(c echo.Context, v *View) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	base := d.f.origin + "/t/" + v.Tenant.Slug + "/"
	auth, err := d.d.Upstreams.BeginConnect(c.Request().Context(), upstreams.ConnectRequest{TenantID: v.Tenant.ID, Server: c.Param("server"),
		Principal: v.Principal, Session: v.Principal.CredentialID, RedirectURI: base + "dashboard/mcp-servers/callback",
		MetadataURL: d.upstreamClientURL(v.Tenant)})
	if fault.Is(err, fault.Forbidden) {
		return err
	}
	if err != nil {
		return d.mcpServerFormError(c, v, mcpServerForm{}, err)
	}
	u, _ := url.Parse(auth)
	v.Object = "mcp_server:" + c.Param("server")
	v.Title, v.Nav, v.Data = "mcpconnect.title", "mcp-servers", connectData{Server: c.Param("server"), Origin: u.Scheme + "://" + u.Host, URL: auth}
	return d.f.Render(c, http.StatusOK, "mcpconnect", v)
}

func (d *Dashboard) disconnectMCPServer(c echo.Context, v *View) error {
	if d.d.Upstreams == nil {
		return fault.New(fault.Unavailable, "upstream MCP servers are not served here")
	}
	s, err := d.d.Upstreams.Disconnect(c.Request().Context(), v.Tenant.ID, c.Param("server"), v.Principal)
	if fault.Is(err, fault.Forbidden) {
		return err
	}
	if err != nil {
		return d.mcpServerFormError(c, v, mcpServerForm{}, err)
	}
	v.Object = "mcp_server:" + s.ID.String()
	return back(c, v, "mcp-servers", "mcp_disconnected")
}

// mcpServerCallback is where the upstream's authorization server sends
// the member back. The state it carries is the flow's CSRF token: taken
// once, unexpired, and only in the session that began the flow. Every
// outcome is an audit row.
func (d *Dashboard) mcpServerCallback(c echo.Context) error {
	v := viewOf(c)
	if d.d.Upstreams == nil {
		return d.fail(c, v, fault.New(fault.Unavailable, "upstream MCP servers are not served here"))
	}
	ctx := c.Request().Context()
	q := c.QueryParams()
	start := time.Now()
	s, err := d.d.Upstreams.FinishConnect(ctx, v.Tenant.ID, v.Principal, v.Principal.CredentialID, upstreams.Callback{State: q.Get("state"),
		Code: q.Get("code"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"), Issuer: q.Get("iss")})
	if s.ID != [16]byte{} {
		v.Object = "mcp_server:" + s.ID.String()
	}
	status, msg := http.StatusSeeOther, ""
	if err != nil {
		status, msg = fault.HTTPStatus(fault.CodeOf(err)), fault.Message(err)
	}
	if rerr := d.record(ctx, v, "connectMCPServer", nil, status, msg, time.Since(start)); rerr != nil && err == nil {
		return d.fail(c, v, fault.Newf(fault.Unavailable, rerr, "the server was connected, but the audit trail could not record it; reload the page"))
	}
	if err != nil {
		return d.mcpServerFormError(c, v, mcpServerForm{}, err)
	}
	if s.LastError != "" {
		return back(c, v, "mcp-servers", "mcp_connected_unreachable")
	}
	return back(c, v, "mcp-servers", "mcp_connected")
}

// upstreamClientURL is the URL of the tenant's Client ID Metadata
// Document: "" unless Visor's base URL is https (a client id URL must be).
func (d *Dashboard) upstreamClientURL(t identity.Tenant) string {
	if !strings.HasPrefix(d.f.origin, "https://") {
		return ""
	}
	return d.f.origin + "/t/" + t.Slug + "/" + upstreamClientPath
}

// upstreamClientDocument serves the tenant's Client ID Metadata Document:
// a public client (no secret) whose one redirect URI is the dashboard's
// callback.
func (d *Dashboard) upstreamClientDocument(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	id := d.f.origin + "/t/" + t.Slug + "/" + upstreamClientPath
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	doc := map[string]any{
		"client_id": id, "client_name": "Visor (" + t.Name + ")",
		"redirect_uris": []string{d.f.origin + "/t/" + t.Slug + "/dashboard/mcp-servers/callback"},
		"grant_types":   []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	if d.f.secure {
		doc["client_uri"] = d.f.origin + "/"
	}
	return c.JSON(http.StatusOK, doc)
}
