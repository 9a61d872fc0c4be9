package ui

import (
	"net/http"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

func (d *Dashboard) settingsRoutes(g *echo.Group) {
	g.GET("/tenant", d.page(identity.ReadTenant, d.settings))
	g.POST("/tenant", d.action("updateTenant", identity.ManageSettings, d.saveTenantSettings))
	g.POST("/me/time_zone", d.action("setMemberTimeZone", identity.ReadTenant, d.saveMemberZone))
}

func (d *Dashboard) settings(c echo.Context, v *View) error {
	t, err := d.d.Identity.Tenant(c.Request().Context(), v.Tenant.ID)
	if err != nil {
		return err
	}
	return d.renderSettings(c, v, http.StatusOK, t)
}

func (d *Dashboard) renderSettings(c echo.Context, v *View, status int, t identity.Tenant) error {
	v.Title, v.Nav, v.Data = "settings.title", "tenant", t
	return d.f.Render(c, status, "settings", v)
}

// saveTenantSettings changes the name and the switches the form shows;
// every other setting stays as it is. The change is announced, so callers
// whose tool lists it alters hear list_changed.
func (d *Dashboard) saveTenantSettings(c echo.Context, v *View) error {
	v.Object = "tenant:" + v.Tenant.ID.String()
	on := func(name string) bool { return c.FormValue(name) == "on" }
	var sent identity.Tenant
	_, err := d.d.Identity.UpdateTenant(c.Request().Context(), v.Tenant.ID, func(t *identity.Tenant) error {
		t.Name = strings.TrimSpace(c.FormValue("name"))
		s := &t.Settings
		s.ServerName = strings.TrimSpace(c.FormValue("server_name"))
		s.TimeZone = strings.TrimSpace(c.FormValue("time_zone"))
		s.MCPStdioImages = strings.FieldsFunc(c.FormValue("mcp_stdio_images"), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
		s.Integrations.GoogleWorkspace, s.Integrations.GitHub = on("google_workspace"), on("github")
		s.Responsibilities, s.ComputerUseWorkspaces = on("responsibilities"), on("computer_use_workspaces")
		sent = *t
		return nil
	})
	if code := fault.CodeOf(err); code == fault.Invalid {
		v.Error, v.ErrorDetail = v.formFailure(err)
		return d.renderSettings(c, v, http.StatusBadRequest, sent)
	} else if err != nil {
		return err
	}
	return back(c, v, "tenant", "tenant_saved")
}
