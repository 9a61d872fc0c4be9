package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// DefaultChallengeScope is the scope a 401 from the MCP endpoint asks
// clients to request, and what an authorization request naming no scope
// gets: every tool scope. A standard client asks for what the challenge
// names, and consent keeps only what the member's role holds
// (identity.Role.Bound), so a connected member sees the tools their role
// may call; a viewer's client gets tools:read alone.
const DefaultChallengeScope = identity.ScopeToolsRead + " " + identity.ScopeToolsWrite + " " + identity.ScopeToolsAdmin

// TenantParam is the path parameter naming the tenant slug.
const TenantParam = "tenant"

// LoadTenant is echo middleware for /t/:tenant/... routes that need the
// tenant but no credential (OAuth endpoints, login pages). An unknown slug
// is 404.
func (r *Resolver) LoadTenant() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			t, err := r.tenantOfPath(c)
			if err != nil {
				return r.fail(c, err, "")
			}
			c.SetRequest(c.Request().WithContext(WithTenant(c.Request().Context(), t)))
			return next(c)
		}
	}
}

// Middleware is echo middleware for the protected /t/:tenant/... routes
// (the MCP endpoint). It loads the tenant by slug (404 when unknown),
// resolves the Authorization bearer credential and stores both in the
// request context. A missing or invalid credential is 401 with a
// WWW-Authenticate challenge naming the tenant's protected resource
// metadata and scope (DefaultChallengeScope when scope is empty).
func (r *Resolver) Middleware(scope string) echo.MiddlewareFunc {
	if scope == "" {
		scope = DefaultChallengeScope
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			t, err := r.tenantOfPath(c)
			if err != nil {
				return r.fail(c, err, "")
			}
			ctx := WithTenant(c.Request().Context(), t)
			p, err := r.Resolve(ctx, t, bearer(c.Request()))
			if err != nil {
				return r.fail(c, err, r.challenge(t.Slug, scope, err))
			}
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(ctx, p)))
			return next(c)
		}
	}
}

// AdminMiddleware is echo middleware for the admin API. The tenant comes
// from the :tenant path parameter when the route has one (and the
// credential must belong to it), otherwise from the credential itself.
// Credentials: an API key or a round token as a bearer, or a member's
// session cookie (see Sessions). OAuth access tokens are refused: their
// audience is the MCP endpoint. Employees' keys and round tokens are
// accepted here too; authorization by kind and scope is the handler's job.
func (r *Resolver) AdminMiddleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			t, p, err := r.resolveAdmin(c)
			if err != nil {
				return r.fail(c, err, `Bearer realm="visor", error="invalid_token"`)
			}
			ctx := identity.WithPrincipal(WithTenant(c.Request().Context(), t), p)
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

func (r *Resolver) resolveAdmin(c echo.Context) (identity.Tenant, identity.Principal, error) {
	ctx := c.Request().Context()
	token := bearer(c.Request())
	if token == "" && r.Sessions != nil {
		if ck, err := c.Cookie(r.Sessions.SessionCookie()); err == nil {
			t, p, err := r.Sessions.ResolveSession(ctx, ck.Value)
			if err != nil {
				return t, p, err
			}
			if err := checkSessionRequest(c.Request(), r.urls); err != nil {
				return t, p, err
			}
			if slug := c.Param(TenantParam); slug != "" && slug != t.Slug {
				return t, p, unauthorized("the session belongs to another tenant")
			}
			return t, p, nil
		}
	}
	var t identity.Tenant
	var err error
	switch {
	case c.Param(TenantParam) != "":
		t, err = r.tenantOfPath(c)
	case identity.TokenKindOf(token) == identity.TokenKey:
		t, err = r.tenantOfKey(ctx, token)
	default:
		err = unauthorized("name the tenant in the path, or use an API key or a session")
	}
	if err != nil {
		return t, identity.Principal{}, err
	}
	p, err := r.Resolve(ctx, t, token)
	if err == nil && p.Kind == identity.KindExternal {
		// An OAuth access token's audience is the tenant's MCP endpoint
		// (RFC 8707); it is not a credential for the admin API.
		return t, identity.Principal{}, unauthorized("OAuth access tokens are bound to the MCP endpoint; use an API key or a member session here")
	}
	return t, p, err
}

// checkSessionRequest refuses cross-site requests authenticated by the
// session cookie: an unsafe method must come from our own origin.
func checkSessionRequest(req *http.Request, urls URLs) error {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if site := req.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return fault.New(fault.Forbidden, "cross-site requests may not use the session cookie")
	}
	if o := req.Header.Get("Origin"); o == "" || o != urls.Base {
		return fault.New(fault.Forbidden, "requests using the session cookie must come from %s", urls.Base)
	}
	return nil
}

func (r *Resolver) tenantOfPath(c echo.Context) (identity.Tenant, error) {
	slug := c.Param(TenantParam)
	if !identity.ValidSlug(slug) {
		return identity.Tenant{}, fault.New(fault.NotFound, "no such tenant")
	}
	t, epoch, ok := r.cache.tenant(slug)
	if ok {
		return t, nil
	}
	t, err := r.store.TenantBySlug(c.Request().Context(), slug)
	if fault.Is(err, fault.NotFound) {
		return t, fault.New(fault.NotFound, "no such tenant")
	}
	if err == nil {
		r.cache.putTenant(t, epoch)
	}
	return t, err
}

// challenge is the WWW-Authenticate value of a 401 at tenant slug.
func (r *Resolver) challenge(slug, scope string, err error) string {
	h := fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, r.urls.ResourceMetadata(slug), scope)
	if !errors.Is(err, errNoToken) {
		h += `, error="invalid_token"`
	}
	return h
}

// fail writes the error response for err: 401 with challenge for
// fault.Unauthorized, 404 for NotFound, 403 for Forbidden, and 503 (logged)
// for anything else. The body is the admin API's {"error": {code, message}}.
func (r *Resolver) fail(c echo.Context, err error, challenge string) error {
	switch code := fault.CodeOf(err); code {
	case fault.Unauthorized:
		if challenge != "" {
			c.Response().Header().Set("WWW-Authenticate", challenge)
		}
	case fault.NotFound, fault.Forbidden, fault.RateLimited:
	default:
		// A credential that could not be checked (storage down) is not the
		// caller's fault: say so, and log the cause once.
		r.log.ErrorContext(c.Request().Context(), "resolve principal", "err", err)
		err = fault.New(fault.Unavailable, "cannot check credentials right now; retry")
	}
	return c.JSON(fault.HTTPStatus(fault.CodeOf(err)), errorBody(err))
}

func errorBody(err error) map[string]any {
	return map[string]any{"error": map[string]string{"code": string(fault.CodeOf(err)), "message": fault.Message(err)}}
}

var errNoToken = unauthorized("a bearer token is required")

// bearer returns the request's bearer token, or "".
func bearer(req *http.Request) string {
	h := req.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// InsufficientScopeChallenge is the WWW-Authenticate value of a 403 asking
// the client to obtain scope at tenant slug (step-up authorization).
func (u URLs) InsufficientScopeChallenge(slug, scope string) string {
	return fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
		scope, u.ResourceMetadata(slug), "this call needs the "+scope+" scope")
}

// WriteInsufficientScope answers 403 insufficient_scope naming the scope the
// call needs, for the tenant in the request context. The MCP edge calls it
// when a valid token lacks a tool's minimum scope.
func (r *Resolver) WriteInsufficientScope(w http.ResponseWriter, req *http.Request, scope string) {
	t, _ := TenantFrom(req.Context())
	w.Header().Set("WWW-Authenticate", r.urls.InsufficientScopeChallenge(t.Slug, scope))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, `{"error":{"code":"insufficient_scope","message":%q}}`, "this call needs the "+scope+" scope")
}
