package oauth

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/ory/fosite"

	"github.com/visorhq/visor/auth"
	provider "github.com/visorhq/visor/auth/oauth"
)

// token is the token endpoint: authorization_code with PKCE, and
// refresh_token with rotation. A resource parameter must name the tenant's
// MCP endpoint.
func (s *Server) token(c echo.Context) error {
	req := c.Request()
	ctx, announce := s.core.WatchRevocations(req.Context())
	defer announce() // a refresh rotates, a reused refresh token or code revokes its grant
	t, _ := auth.TenantFrom(ctx)
	w := c.Response()
	sess := &provider.Session{}
	if err := req.ParseForm(); err == nil {
		for _, r := range req.PostForm["resource"] {
			if !sameResource(r, s.urls.Resource(t.Slug)) {
				s.fosite.WriteAccessError(ctx, w, nil, errInvalidTarget())
				return nil
			}
		}
	}
	ar, err := s.fosite.NewAccessRequest(ctx, req, sess)
	if err != nil {
		s.logServerError(ctx, "token request", err)
		s.fosite.WriteAccessError(ctx, w, ar, err)
		return nil
	}
	resp, err := s.fosite.NewAccessResponse(ctx, ar)
	if err != nil {
		s.logServerError(ctx, "token response", err)
		s.fosite.WriteAccessError(ctx, w, ar, err)
		return nil
	}
	s.fosite.WriteAccessResponse(ctx, w, ar, resp)
	return nil
}

// revoke is the RFC 7009 revocation endpoint. Revoking either token of a
// grant revokes the whole grant.
func (s *Server) revoke(c echo.Context) error {
	ctx, announce := s.core.WatchRevocations(c.Request().Context())
	err := s.fosite.NewRevocationRequest(ctx, c.Request())
	announce()
	s.logServerError(ctx, "revocation", err)
	s.fosite.WriteRevocationResponse(ctx, c.Response(), err)
	return nil
}

// logServerError logs fosite failures that are ours (5xx), never the
// request's credentials.
func (s *Server) logServerError(ctx context.Context, what string, err error) {
	if err == nil {
		return
	}
	if rfc := fosite.ErrorToRFC6749Error(err); rfc.CodeField >= http.StatusInternalServerError {
		s.log.ErrorContext(ctx, what, "err", rfc.Error(), "debug", rfc.DebugField)
	}
}
