package api

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

type members struct{ a *API }

// NewMember is the body of POST /tenants/{tenant}/members.
type NewMember struct {
	Email    string        `json:"email"`
	Password string        `json:"password"`
	Role     identity.Role `json:"role"`
}

// MemberPatch is the body of PATCH /tenants/{tenant}/members/{member}.
type MemberPatch struct {
	Role     *identity.Role `json:"role,omitempty"`
	Password *string        `json:"password,omitempty"`
}

// MemberList is the body of GET /tenants/{tenant}/members.
type MemberList struct {
	Members    []Member `json:"members"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

func (r members) Operations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/members", ID: "listMembers", Tag: "members", Needs: identity.ReadTenant,
			Summary: "List the tenant's members, by email", Query: Paged(), Response: MemberList{}, Handler: r.list},
		{Method: http.MethodPost, Path: "/tenants/:tenant/members", ID: "createMember", Errors: []int{http.StatusConflict}, Tag: "members", Needs: identity.ManageMembers,
			Summary: "Add a member with a password (10-256 bytes) and a role; only owners add owners", Request: NewMember{}, Response: Member{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodGet, Path: "/tenants/:tenant/members/:member", ID: "getMember", Tag: "members", Needs: identity.ReadTenant,
			Summary: "Get a member", Response: Member{}, Handler: r.get},
		{Method: http.MethodPatch, Path: "/tenants/:tenant/members/:member", ID: "updateMember", Errors: []int{http.StatusConflict}, Tag: "members", Needs: identity.ManageMembers,
			Summary: "Change a member's role or password (ends their other sessions); only owners touch owners, nobody raises their own role", Request: MemberPatch{}, Response: Member{}, Handler: r.update},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/members/:member", ID: "deleteMember", Errors: []int{http.StatusConflict}, Tag: "members", Needs: identity.ManageMembers,
			Summary: "Remove a member (never the last owner; only owners remove owners) and revoke the keys they made", Status: http.StatusNoContent, Handler: r.remove},
	}
}

func (r members) list(c echo.Context) error {
	ms, err := r.a.ids.ListMembers(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, ms, func(m identity.Member) string { return m.Email })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, MemberList{Members: mapSlice(page, memberOut), NextCursor: next})
}

func (r members) create(c echo.Context) error {
	var in NewMember
	if err := decode(c, &in); err != nil {
		return err
	}
	m, err := r.a.ids.AddMember(c.Request().Context(), principal(c), tenant(c).ID, in.Email, in.Password, in.Role)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, memberOut(m))
}

func (r members) get(c echo.Context) error {
	id, err := pathID(c, "member")
	if err != nil {
		return err
	}
	m, err := r.a.ids.Member(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, memberOut(m))
}

func (r members) update(c echo.Context) error {
	id, err := pathID(c, "member")
	if err != nil {
		return err
	}
	var in MemberPatch
	if err := decode(c, &in); err != nil {
		return err
	}
	m, err := r.a.ids.UpdateMember(c.Request().Context(), principal(c), tenant(c).ID, id,
		identity.MemberUpdate{Role: in.Role, Password: in.Password})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, memberOut(m))
}

func (r members) remove(c echo.Context) error {
	id, err := pathID(c, "member")
	if err != nil {
		return err
	}
	if err := r.a.ids.DeleteMember(c.Request().Context(), principal(c), tenant(c).ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// pathID parses a UUID path parameter; a malformed one is simply not found.
func pathID(c echo.Context, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param(name))
	if err != nil {
		return uuid.Nil, fault.New(fault.NotFound, "%s not found", name)
	}
	return id, nil
}
