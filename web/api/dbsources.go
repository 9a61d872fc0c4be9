package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/identity"
)

// DBSources is the admin API of a tenant's database sources. A source's
// password is write-only: answers say only whether one is set. Add it with
// API.Add.
type DBSources struct{ svc *dbsources.Service }

// NewDBSources returns the database sources resource.
func NewDBSources(svc *dbsources.Service) DBSources { return DBSources{svc: svc} }

// DBSourceInput is the body of POST /tenants/{tenant}/db-sources and of
// PATCH …/db-sources/{source}. On a PATCH absent fields keep their values
// (an empty list clears an allow list), and the name cannot change.
type DBSourceInput struct {
	Name string `json:"name,omitempty"`
	// ConnectionString is postgres://user:password@host:5432/db?sslmode=…
	// or mysql://…; its password is sealed and never returned. On a PATCH,
	// absent keeps the connection and password.
	ConnectionString   string   `json:"connection_string,omitempty"`
	Schemas            []string `json:"schemas,omitempty"`
	Tables             []string `json:"tables,omitempty"`
	StatementTimeoutMS int64    `json:"statement_timeout_ms,omitempty"`
	MaxRows            int      `json:"max_rows,omitempty"`
	MaxBytes           int      `json:"max_bytes,omitempty"`
	MaxConcurrent      int      `json:"max_concurrent,omitempty"`
	Description        *string  `json:"description,omitempty"`
}

// DBSourceList is the body of GET /tenants/{tenant}/db-sources: one page
// of sources by name, and the cursor of the next when there may be more.
type DBSourceList struct {
	Sources    []dbsources.Source `json:"sources"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// Operations lists the database source routes.
func (r DBSources) Operations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/db-sources", ID: "listDBSources", Tag: "db-sources", Needs: identity.ReadTenant,
			Summary: "List the tenant's database sources (passwords are never returned)", Response: DBSourceList{}, Handler: r.list, Query: Paged()},
		{Method: http.MethodPost, Path: "/tenants/:tenant/db-sources", ID: "createDBSource", Errors: []int{http.StatusConflict}, Tag: "db-sources", Needs: identity.ManageSettings,
			Summary: "Add a database source after a test connection through the outbound guard", Request: DBSourceInput{}, Response: dbsources.Source{},
			Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodGet, Path: "/tenants/:tenant/db-sources/:source", ID: "getDBSource", Tag: "db-sources", Needs: identity.ReadTenant,
			Summary: "Get a database source by id or name", Response: dbsources.Source{}, Handler: r.get},
		{Method: http.MethodPatch, Path: "/tenants/:tenant/db-sources/:source", ID: "updateDBSource", Tag: "db-sources", Needs: identity.ManageSettings,
			Summary: "Change a database source (absent fields stay) after a test connection", Request: DBSourceInput{}, Response: dbsources.Source{}, Handler: r.update},
		{Method: http.MethodPost, Path: "/tenants/:tenant/db-sources/:source/test", ID: "testDBSource", Tag: "db-sources", Needs: identity.ManageSettings,
			Summary: "Connect to a saved database source as a save does", Response: dbsources.Source{}, Handler: r.test},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/db-sources/:source", ID: "deleteDBSource", Tag: "db-sources", Needs: identity.ManageSettings,
			Summary:  "Remove a database source; its name leaves every AI employee's settings (list_changed where their tools change)",
			Response: dbsources.Source{}, Handler: r.remove},
	}
}

// list pages through the tenant's sources by name (a tenant holds at most
// a hundred, so the page is cut from the whole list).
func (r DBSources) list(c echo.Context) error {
	all, err := r.svc.List(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	sources, next, err := pageBy(c, all, func(s dbsources.Source) string { return s.Name })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DBSourceList{Sources: nonNil(sources), NextCursor: next})
}

func (r DBSources) get(c echo.Context) error {
	s, err := r.svc.Source(c.Request().Context(), tenant(c).ID, c.Param("source"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r DBSources) create(c echo.Context) error {
	var in DBSourceInput
	if err := decode(c, &in); err != nil {
		return err
	}
	s, err := r.svc.Create(c.Request().Context(), tenant(c).ID, in.merge(dbsources.Source{}), principal(c).ID())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s)
}

func (r DBSources) update(c echo.Context) error {
	ctx := c.Request().Context()
	old, err := r.svc.Source(ctx, tenant(c).ID, c.Param("source"))
	if err != nil {
		return err
	}
	var in DBSourceInput
	if err := decode(c, &in); err != nil {
		return err
	}
	s, err := r.svc.Update(ctx, tenant(c).ID, old.ID, in.merge(old))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r DBSources) test(c echo.Context) error {
	s, err := r.svc.Test(c.Request().Context(), tenant(c).ID, c.Param("source"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (r DBSources) remove(c echo.Context) error {
	ctx := c.Request().Context()
	old, err := r.svc.Source(ctx, tenant(c).ID, c.Param("source"))
	if err != nil {
		return err
	}
	s, err := r.svc.Remove(ctx, tenant(c).ID, old.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

// merge returns the service's input: in's fields over old's.
func (in DBSourceInput) merge(old dbsources.Source) dbsources.Input {
	out := dbsources.Input{Name: in.Name, URL: in.ConnectionString, Schemas: old.Schemas, Tables: old.Tables,
		Limits: old.Limits, Description: old.Description}
	if in.Schemas != nil {
		out.Schemas = in.Schemas
	}
	if in.Tables != nil {
		out.Tables = in.Tables
	}
	if in.Description != nil {
		out.Description = *in.Description
	}
	if in.StatementTimeoutMS != 0 {
		out.Limits.StatementTimeout = time.Duration(in.StatementTimeoutMS) * time.Millisecond
	}
	for _, f := range []struct{ in, out *int }{{&in.MaxRows, &out.Limits.MaxRows}, {&in.MaxBytes, &out.Limits.MaxBytes}, {&in.MaxConcurrent, &out.Limits.MaxConcurrent}} {
		if *f.in != 0 {
			*f.out = *f.in
		}
	}
	return out
}
