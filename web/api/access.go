package api

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// authenticate resolves the caller. The platform token is checked first
// (it works on every route and names its tenant by the path); anything
// else goes to the injected authenticator, which needs the tenant in the
// path.
func (a *API) authenticate() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		viaAuth := next
		if a.authn != nil {
			viaAuth = a.authn(next)
		}
		return func(c echo.Context) error {
			if !a.isPlatform(c.Request()) {
				return viaAuth(c)
			}
			ctx := c.Request().Context()
			p := identity.Principal{Kind: identity.KindOperator, CredentialID: identity.PlatformCredential, Scopes: identity.AllScopes}
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
	t, err := a.ids.TenantBySlug(ctx, slug)
	if fault.Is(err, fault.NotFound) {
		return t, fault.New(fault.NotFound, "no such tenant")
	}
	return t, err
}

// authorize lets the request through when its principal may take the
// action the operation needs (identity.Principal.Check: the authority
// matrix, the credential's scopes, and the role of the member behind it).
// Rules that depend on the object (only owners touch owners, a key never
// gets more than its creator holds) are the service's, on the same types.
func (a *API) authorize(need identity.Action) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			p, ok := identity.PrincipalFrom(ctx)
			if !ok {
				return fault.New(fault.Unauthorized, "a bearer token or a session is required")
			}
			if !p.IsPlatform() {
				if t, ok := auth.TenantFrom(ctx); !ok || t.ID != p.TenantID {
					return fault.New(fault.Forbidden, "the credential belongs to another tenant")
				}
			}
			if err := p.Check(need); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// principal returns the caller (set by authentication).
func principal(c echo.Context) identity.Principal {
	p, _ := identity.PrincipalFrom(c.Request().Context())
	return p
}

// tenant returns the tenant the request addresses (set by authentication).
func tenant(c echo.Context) identity.Tenant {
	t, _ := auth.TenantFrom(c.Request().Context())
	return t
}
