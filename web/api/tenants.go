package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
)

type tenants struct{ a *API }

// NewTenant is the body of POST /tenants.
type NewTenant struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// TenantPatch is the body of PATCH /tenants/{tenant}; absent fields stay.
type TenantPatch struct {
	Name     *string                  `json:"name,omitempty"`
	Settings *identity.TenantSettings `json:"settings,omitempty"`
}

// TenantList is the body of GET /tenants.
type TenantList struct {
	Tenants    []Tenant `json:"tenants"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

func (r tenants) Operations() []Operation {
	return []Operation{
		{Method: http.MethodPost, Path: "/tenants", ID: "createTenant", Errors: []int{http.StatusConflict}, Tag: "tenants", Needs: identity.ManageTenants,
			Summary: "Create a tenant (platform admin token)", Request: NewTenant{}, Response: Tenant{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodGet, Path: "/tenants", ID: "listTenants", Tag: "tenants", Needs: identity.ManageTenants,
			Summary: "List every tenant (platform admin token), by slug", Query: Paged(), Response: TenantList{}, Handler: r.list},
		{Method: http.MethodGet, Path: "/tenants/:tenant", ID: "getTenant", Tag: "tenants", Needs: identity.ReadTenant,
			Summary: "Get the tenant and its settings", Response: Tenant{}, Handler: r.get},
		{Method: http.MethodPatch, Path: "/tenants/:tenant", ID: "updateTenant", Tag: "tenants", Needs: identity.ManageSettings,
			Summary: "Change the tenant's name or settings (settings are replaced whole)", Request: TenantPatch{}, Response: Tenant{}, Handler: r.update},
	}
}

func (r tenants) create(c echo.Context) error {
	var in NewTenant
	if err := decode(c, &in); err != nil {
		return err
	}
	t, err := r.a.ids.CreateTenant(c.Request().Context(), in.Slug, in.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, tenantOut(t))
}

func (r tenants) list(c echo.Context) error {
	ts, err := r.a.ids.ListTenants(c.Request().Context())
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, ts, func(t identity.Tenant) string { return t.Slug })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, TenantList{Tenants: mapSlice(page, tenantOut), NextCursor: next})
}

func (r tenants) get(c echo.Context) error {
	t, err := r.a.ids.Tenant(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tenantOut(t))
}

func (r tenants) update(c echo.Context) error {
	var in TenantPatch
	if err := decode(c, &in); err != nil {
		return err
	}
	t, err := r.a.ids.UpdateTenant(c.Request().Context(), tenant(c).ID, func(t *identity.Tenant) error {
		if in.Name != nil {
			t.Name = *in.Name
		}
		if in.Settings != nil {
			t.Settings = *in.Settings
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tenantOut(t))
}
