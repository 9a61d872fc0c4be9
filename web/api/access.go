package api

import (
	"context"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Access is what an operation requires of its caller.
type Access int

// Access levels.
const (
	// Platform operations (creating and listing tenants) need the platform
	// admin token.
	Platform Access = iota + 1
	// Read needs a principal of the tenant allowed to read its
	// configuration: an operator key, any member, or an OAuth token with
	// admin:read.
	Read
	// Write needs one allowed to change it: an operator key, an owner,
	// admin or operator member, or an OAuth token with admin:write.
	Write
	// ManageMembers needs an operator key, an owner or admin member, or an
	// OAuth token with admin:write.
	ManageMembers
)

// platformCredential marks the principal the platform token acts as.
const platformCredential = "platform"

// authenticate resolves the caller. The platform token is checked first
// (it works on every route and names its tenant by the path); anything
// else goes to the injected authenticator, which needs the tenant in the
// path.
func (a *API) authenticate(op Operation) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		viaAuth := next
		if a.authn != nil {
			viaAuth = a.authn(next)
		}
		return func(c echo.Context) error {
			if !a.isPlatform(c.Request()) {
				if op.Access == Platform {
					return fault.New(fault.Forbidden, "this operation needs the platform admin token (VISOR_ADMIN_TOKEN)")
				}
				return viaAuth(c)
			}
			ctx := c.Request().Context()
			p := identity.Principal{Kind: identity.KindOperator, CredentialID: platformCredential}
			if slug := c.Param(auth.TenantParam); slug != "" {
				t, err := a.tenantBySlug(ctx, slug)
				if err != nil {
					return err
				}
				p.TenantID, p.TenantSlug = t.ID, t.Slug
				ctx = auth.WithTenant(ctx, t)
			}
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(ctx, p)))
			return next(c)
		}
	}
}

func (a *API) tenantBySlug(ctx context.Context, slug string) (identity.Tenant, error) {
	if !identity.ValidSlug(slug) {
		return identity.Tenant{}, fault.New(fault.NotFound, "no such tenant")
	}
	t, err := a.ids.Store().TenantBySlug(ctx, slug)
	if fault.Is(err, fault.NotFound) {
		return t, fault.New(fault.NotFound, "no such tenant")
	}
	return t, err
}

// authorize checks the resolved principal against the operation's access.
func (a *API) authorize(need Access) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			p, ok := identity.PrincipalFrom(ctx)
			if !ok {
				return fault.New(fault.Unauthorized, "a bearer token or a session is required")
			}
			if p.CredentialID == platformCredential {
				return next(c)
			}
			if need == Platform {
				return fault.New(fault.Forbidden, "this operation needs the platform admin token")
			}
			if t, ok := auth.TenantFrom(ctx); !ok || t.ID != p.TenantID {
				return fault.New(fault.Forbidden, "the credential belongs to another tenant")
			}
			if err := a.allowed(ctx, p, need); err != nil {
				return err
			}
			return next(c)
		}
	}
}

func (a *API) allowed(ctx context.Context, p identity.Principal, need Access) error {
	switch {
	case p.Kind == identity.KindEmployee:
		return fault.New(fault.Forbidden, "AI employees' credentials cannot use the admin API; use an operator key")
	case p.Kind == identity.KindExternal:
		scope := identity.ScopeAdminWrite
		if need == Read {
			scope = identity.ScopeAdminRead
		}
		if !p.HasScope(scope) {
			return fault.New(fault.Forbidden, "this operation needs the %s scope", scope)
		}
		return nil
	case p.MemberID != uuid.Nil: // a member's dashboard session
		m, err := a.ids.Store().Member(ctx, p.TenantID, p.MemberID)
		if fault.Is(err, fault.NotFound) {
			return fault.New(fault.Unauthorized, "the session's member no longer exists")
		}
		if err != nil {
			return err
		}
		return roleAllows(m.Role, need)
	}
	return nil // an operator key: unrestricted inside its tenant
}

func roleAllows(r identity.Role, need Access) error {
	switch need {
	case Read:
		return nil
	case Write:
		if r.CanManage() {
			return nil
		}
	case ManageMembers:
		if r == identity.RoleOwner || r == identity.RoleAdmin {
			return nil
		}
	}
	return fault.New(fault.Forbidden, "a member with role %s may not do this", r)
}

// tenant returns the tenant the request addresses (set by authentication).
func tenant(c echo.Context) identity.Tenant {
	t, _ := auth.TenantFrom(c.Request().Context())
	return t
}
