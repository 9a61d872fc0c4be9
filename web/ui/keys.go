package ui

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

func (d *Dashboard) keyRoutes(g *echo.Group) {
	g.GET("/keys", d.page(identity.ReadTenant, d.keys))
	g.POST("/keys", d.action("createKey", identity.ManageKeys, d.createKey))
	g.POST("/keys/:key/revoke", d.confirmFirst(identity.ManageKeys, "confirm.revoke_key", "key.revoke", d.action("revokeKey", identity.ManageKeys, d.revokeKey)))
}

type keysData struct {
	Keys  []identity.Key
	Names map[uuid.UUID]string // the names of the keys' agents
	// Scopes are the scopes the member may put on a key: its own.
	Scopes []string
	Form   keyForm
	// Token is the bearer token of the key just created: shown once.
	Token   string
	Created *identity.Key
}

type keyForm struct {
	Name, Kind, Agent, Days string
	Scopes                  []string
}

// keys shows the keys, and once, right after createKey's redirect, the
// token of the key just created.
func (d *Dashboard) keys(c echo.Context, v *View) error {
	data := keysData{Form: keyForm{Kind: string(identity.KeyOperator)}}
	if o, ok := d.f.takeOnce(c, v.Dash("keys"), v.Tenant.ID.String(), v.Member.ID.String()); ok {
		if id, err := uuid.Parse(o.Object); err == nil {
			if k, err := d.d.Identity.Key(c.Request().Context(), v.Tenant.ID, id); err == nil {
				data.Token, data.Created = o.Secret, &k
				v.Notice = "done.key_created"
			}
		}
	}
	return d.renderKeys(c, v, http.StatusOK, data)
}

func (d *Dashboard) renderKeys(c echo.Context, v *View, status int, data keysData) error {
	ctx := c.Request().Context()
	ks, err := d.d.Identity.ListKeys(ctx, v.Tenant.ID)
	if err != nil {
		return err
	}
	var ids []uuid.UUID
	for _, k := range ks {
		if k.AgentID != uuid.Nil {
			ids = append(ids, k.AgentID)
		}
	}
	names, err := d.d.Identity.AgentNames(ctx, v.Tenant.ID, ids)
	if err != nil {
		return err
	}
	data.Keys, data.Names = ks, names
	data.Scopes = v.Principal.Scopes
	v.Title, v.Nav, v.Data = "keys.title", "keys", data
	if data.Token != "" {
		c.Response().Header().Set("Cache-Control", "no-store")
	}
	return d.f.Render(c, status, "keys", v)
}

// maxKeyDays bounds a key's lifetime chosen in the form.
const maxKeyDays = 3650

// createKey issues a key with the member's authority (never more than the
// member holds) and redirects to the keys page, which shows its token once.
func (d *Dashboard) createKey(c echo.Context, v *View) error {
	fv, _ := c.FormParams()
	f := keyForm{Name: strings.TrimSpace(c.FormValue("name")), Kind: c.FormValue("kind"), Agent: c.FormValue("agent"),
		Days: strings.TrimSpace(c.FormValue("days")), Scopes: fv["scope"]}
	nk := identity.NewKey{Kind: identity.KeyKind(f.Kind), Name: f.Name, Scopes: f.Scopes}
	if len(nk.Scopes) > len(identity.AllScopes) {
		return d.keysFormError(c, v, f, fault.New(fault.Invalid, "too many scopes"))
	}
	if nk.Kind == identity.KeyAgent {
		id, err := d.keyAgent(c, v, strings.TrimSpace(f.Agent))
		if err != nil {
			return d.keysFormError(c, v, f, err)
		}
		nk.AgentID = id
	}
	if f.Days != "" {
		n, err := strconv.Atoi(f.Days)
		if err != nil || n < 1 || n > maxKeyDays {
			return d.keysFormError(c, v, f, fault.New(fault.Invalid, "the lifetime must be a whole number of days from 1 to %d", maxKeyDays))
		}
		exp := time.Now().Add(time.Duration(n) * 24 * time.Hour)
		nk.ExpiresAt = &exp
	}
	k, token, err := d.d.Identity.IssueKey(c.Request().Context(), v.Principal, v.Tenant.ID, nk)
	if err != nil {
		return d.keysFormError(c, v, f, err)
	}
	v.Object = "key:" + k.ID.String()
	d.f.setOnce(c, v.Dash("keys"), onceValue{Tenant: v.Tenant.ID.String(), Member: v.Member.ID.String(), Object: k.ID.String(), Secret: token})
	return back(c, v, "keys", "")
}

// keyAgent resolves the AI employee an agent key acts as, named by the
// form (or given by id): an active agent of the member's tenant.
func (d *Dashboard) keyAgent(c echo.Context, v *View, ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil // issuing refuses an id that names no active agent of the tenant
	}
	if !identity.ValidAgentName(ref) {
		return uuid.Nil, fault.New(fault.Invalid, "agent must name an AI employee of this tenant")
	}
	a, err := d.d.Identity.AgentByName(c.Request().Context(), v.Tenant.ID, ref)
	if fault.Is(err, fault.NotFound) || err == nil && a.Status != identity.AgentActive {
		return uuid.Nil, fault.New(fault.Invalid, "agent must name an active AI employee of this tenant; there is none named %q", ref)
	}
	return a.ID, err
}

func (d *Dashboard) keysFormError(c echo.Context, v *View, f keyForm, err error) error {
	code := fault.CodeOf(err)
	if code != fault.Invalid && code != fault.Conflict && code != fault.NotFound && code != fault.Forbidden {
		return err
	}
	v.Error, v.ErrorDetail = v.formFailure(err)
	return d.renderKeys(c, v, fault.HTTPStatus(code), keysData{Form: f})
}

func (d *Dashboard) revokeKey(c echo.Context, v *View) error {
	id, err := uuid.Parse(c.Param("key"))
	if err != nil {
		return fault.New(fault.NotFound, "no such key")
	}
	v.Object = "key:" + id.String()
	if _, err := d.d.Identity.RevokeKey(c.Request().Context(), v.Tenant.ID, id); err != nil {
		return err
	}
	return back(c, v, "keys", "key_revoked")
}

// HasScope reports whether a key form has scope s ticked.
func (f keyForm) HasScope(s string) bool { return slices.Contains(f.Scopes, s) }
