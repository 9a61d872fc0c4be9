package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

func (d *Dashboard) dbSourceRoutes(g *echo.Group) {
	g.GET("/dbsources", d.page(identity.ReadTenant, d.dbSources))
	g.POST("/dbsources", d.action("createDBSource", identity.ManageSettings, d.createDBSource))
	g.POST("/dbsources/:source/test", d.action("testDBSource", identity.ManageSettings, d.testDBSource))
	g.POST("/dbsources/:source/remove", d.action("deleteDBSource", identity.ManageSettings, d.removeDBSource))
}

type dbSourcesData struct {
	Sources []dbsources.Source
	Form    dbSourceForm
	Kinds   []dbsources.Kind
}

// dbSourceForm is the add form as posted, for redrawing it after an
// error. The password is never drawn back.
type dbSourceForm struct {
	Name, Connection, Schemas, Tables, TimeoutMS, MaxRows, Description string
}

func (d *Dashboard) dbSources(c echo.Context, v *View) error {
	return d.renderDBSources(c, v, http.StatusOK, dbSourceForm{})
}

func (d *Dashboard) renderDBSources(c echo.Context, v *View, status int, f dbSourceForm) error {
	if d.d.DBSources == nil {
		return fault.New(fault.Unavailable, "database sources are not served here")
	}
	list, err := d.d.DBSources.List(c.Request().Context(), v.Tenant.ID)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "dbsources.title", "dbsources", dbSourcesData{Sources: list, Form: f, Kinds: dbsources.Kinds}
	return d.f.Render(c, status, "dbsources", v)
}

// createDBSource adds a source from the form: the connection string
// without its password, and the password in its own field.
func (d *Dashboard) createDBSource(c echo.Context, v *View) error {
	if d.d.DBSources == nil {
		return fault.New(fault.Unavailable, "database sources are not served here")
	}
	f := dbSourceForm{Name: strings.TrimSpace(c.FormValue("name")), Connection: strings.TrimSpace(c.FormValue("connection_string")),
		Schemas: c.FormValue("schemas"), Tables: c.FormValue("tables"), TimeoutMS: strings.TrimSpace(c.FormValue("statement_timeout_ms")),
		MaxRows: strings.TrimSpace(c.FormValue("max_rows")), Description: c.FormValue("description")}
	in := dbsources.Input{Name: f.Name, URL: f.Connection, Schemas: splitNames(f.Schemas), Tables: splitNames(f.Tables), Description: f.Description}
	if pw := c.FormValue("password"); pw != "" {
		u, err := url.Parse(f.Connection)
		if err != nil || u.User == nil {
			return d.dbSourceFormError(c, v, f, fault.New(fault.Invalid, "connection_string must name a user to go with the password"))
		}
		u.User = url.UserPassword(u.User.Username(), pw)
		in.URL = u.String()
	}
	for _, n := range []struct {
		raw string
		set func(int)
	}{{f.TimeoutMS, func(ms int) { in.Limits.StatementTimeout = time.Duration(ms) * time.Millisecond }}, {f.MaxRows, func(n int) { in.Limits.MaxRows = n }}} {
		if n.raw == "" {
			continue
		}
		x, err := strconv.Atoi(n.raw)
		if err != nil || x <= 0 {
			return d.dbSourceFormError(c, v, f, fault.New(fault.Invalid, "limits must be whole positive numbers"))
		}
		n.set(x)
	}
	s, err := d.d.DBSources.Create(c.Request().Context(), v.Tenant.ID, in, v.Principal.ID())
	if err != nil {
		return d.dbSourceFormError(c, v, f, err)
	}
	v.Object = "db_source:" + s.ID.String()
	return back(c, v, "dbsources", "dbsource_added")
}

func (d *Dashboard) dbSourceFormError(c echo.Context, v *View, f dbSourceForm, err error) error {
	code := fault.CodeOf(err)
	if code != fault.Invalid && code != fault.Conflict && code != fault.Unavailable {
		return err
	}
	v.Error, v.ErrorDetail = v.formFailure(err)
	return d.renderDBSources(c, v, fault.HTTPStatus(code), f)
}

func (d *Dashboard) testDBSource(c echo.Context, v *View) error {
	if d.d.DBSources == nil {
		return fault.New(fault.Unavailable, "database sources are not served here")
	}
	s, err := d.d.DBSources.Test(c.Request().Context(), v.Tenant.ID, c.Param("source"))
	if fault.Is(err, fault.Invalid) {
		v.Object = "db_source:" + s.ID.String()
		return d.dbSourceFormError(c, v, dbSourceForm{}, err)
	}
	if err != nil {
		return err
	}
	v.Object = "db_source:" + s.ID.String()
	return back(c, v, "dbsources", "dbsource_tested")
}

func (d *Dashboard) removeDBSource(c echo.Context, v *View) error {
	if d.d.DBSources == nil {
		return fault.New(fault.Unavailable, "database sources are not served here")
	}
	ctx := c.Request().Context()
	s, err := d.d.DBSources.Source(ctx, v.Tenant.ID, c.Param("source"))
	if err != nil {
		return err
	}
	v.Object = "db_source:" + s.ID.String()
	if _, err := d.d.DBSources.Remove(ctx, v.Tenant.ID, s.ID); err != nil {
		return err
	}
	return back(c, v, "dbsources", "dbsource_removed")
}

// splitNames reads an allow list typed as names separated by commas or
// spaces; never nil, so an empty field clears the list.
func splitNames(s string) []string {
	return append([]string{}, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })...)
}
