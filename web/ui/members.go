package ui

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

func (d *Dashboard) memberRoutes(g *echo.Group) {
	g.GET("/members", d.page(identity.ReadTenant, d.members))
	g.POST("/members", d.action("createMember", identity.ManageMembers, d.addMember))
	g.POST("/members/:member/role", d.action("updateMember", identity.ManageMembers, d.setRole))
	g.POST("/members/:member/remove", d.confirmFirst(identity.ManageMembers, "confirm.remove_member", "member.remove", d.action("deleteMember", identity.ManageMembers, d.removeMember)))
}

type membersData struct {
	Members []memberRow
	// Roles are the roles the signed-in member may give: owner only to
	// an owner.
	Roles []identity.Role
	Form  memberForm
}

// memberRow is one member and what the signed-in member may do to them.
type memberRow struct {
	identity.Member
	CanChange bool // change the role or remove (CheckMemberChange)
	Self      bool
}

type memberForm struct{ Email, Role string }

func (d *Dashboard) members(c echo.Context, v *View) error {
	return d.renderMembers(c, v, http.StatusOK, memberForm{Role: string(identity.RoleViewer)})
}

func (d *Dashboard) renderMembers(c echo.Context, v *View, status int, f memberForm) error {
	ms, err := d.d.Identity.ListMembers(c.Request().Context(), v.Tenant.ID)
	if err != nil {
		return err
	}
	data := membersData{Form: f}
	for _, m := range ms {
		before := m
		// The page offers what the domain rule allows: the same check the
		// service makes when the form is posted.
		can := v.Principal.CheckMemberChange(identity.MemberChange{Before: &before, Remove: true}) == nil
		data.Members = append(data.Members, memberRow{Member: m, CanChange: can, Self: m.ID == v.Member.ID})
	}
	for _, r := range identity.Roles {
		if v.Principal.CheckMemberChange(identity.MemberChange{Role: r}) == nil {
			data.Roles = append(data.Roles, r)
		}
	}
	v.Title, v.Nav, v.Data = "members.title", "members", data
	return d.f.Render(c, status, "members", v)
}

func (d *Dashboard) addMember(c echo.Context, v *View) error {
	f := memberForm{Email: strings.TrimSpace(c.FormValue("email")), Role: c.FormValue("role")}
	m, err := d.d.Identity.AddMember(c.Request().Context(), v.Principal, v.Tenant.ID, f.Email, c.FormValue("password"), identity.Role(f.Role))
	if err != nil {
		return d.membersFormError(c, v, f, err)
	}
	v.Object = "member:" + m.ID.String()
	return back(c, v, "members", "member_added")
}

func (d *Dashboard) membersFormError(c echo.Context, v *View, f memberForm, err error) error {
	code := fault.CodeOf(err)
	if code != fault.Invalid && code != fault.Conflict && code != fault.NotFound && code != fault.Forbidden {
		return err
	}
	v.Error, v.ErrorDetail = v.formFailure(err)
	return d.renderMembers(c, v, fault.HTTPStatus(code), f)
}

func memberParam(c echo.Context, v *View) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("member"))
	if err != nil {
		return uuid.Nil, fault.New(fault.NotFound, "no such member")
	}
	v.Object = "member:" + id.String()
	return id, nil
}

// setRole changes a member's role through the service, which applies the
// owner rules and ends the sessions of a member whose role went down.
func (d *Dashboard) setRole(c echo.Context, v *View) error {
	id, err := memberParam(c, v)
	if err != nil {
		return err
	}
	role := identity.Role(c.FormValue("role"))
	if _, err := d.d.Identity.UpdateMember(c.Request().Context(), v.Principal, v.Tenant.ID, id, identity.MemberUpdate{Role: &role}); err != nil {
		return d.membersFormError(c, v, memberForm{Role: string(identity.RoleViewer)}, err)
	}
	return back(c, v, "members", "member_changed")
}

func (d *Dashboard) removeMember(c echo.Context, v *View) error {
	id, err := memberParam(c, v)
	if err != nil {
		return err
	}
	if err := d.d.Identity.DeleteMember(c.Request().Context(), v.Principal, v.Tenant.ID, id); err != nil {
		return d.membersFormError(c, v, memberForm{Role: string(identity.RoleViewer)}, err)
	}
	if id == v.Member.ID {
		return c.Redirect(http.StatusSeeOther, v.TenantPath("login"))
	}
	return back(c, v, "members", "member_removed")
}
