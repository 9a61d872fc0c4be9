package oauth

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

// RegistrationResponse is the RFC 7591 answer to a registration.
type RegistrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope"`
}

const maxRegistrationBytes = 64 << 10

// registerClient is RFC 7591 dynamic registration. Anyone may register, so
// the limits must not let one party lock the tenant's real clients out:
// attempts are limited per source address, and only registrations that
// created a client count toward the tenant's much higher ceiling (which
// bounds storage, and which one address alone can never reach).
func (s *Server) registerClient(c echo.Context) error {
	ctx := c.Request().Context()
	t, _ := auth.TenantFrom(ctx)
	if !s.register.Allow(ctx, t.ID.String()+"|"+provider.SourceKey(c.RealIP())) {
		s.log.WarnContext(ctx, "client registration rate limited", "tenant", t.ID, "ip", c.RealIP())
		c.Response().Header().Set("Retry-After", "600")
		return c.JSON(http.StatusTooManyRequests, oauthError("too_many_requests", "too many client registrations from your address; try again later"))
	}
	undo, ok := s.registerCeiling.Reserve(ctx, t.ID.String())
	if !ok {
		undo()
		s.log.WarnContext(ctx, "client registration ceiling reached", "tenant", t.ID)
		c.Response().Header().Set("Retry-After", "600")
		return c.JSON(http.StatusTooManyRequests, oauthError("too_many_requests", "too many client registrations for this tenant; try again later"))
	}
	created := false
	defer func() {
		if !created {
			undo()
		}
	}()
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxRegistrationBytes+1))
	if err != nil || len(body) > maxRegistrationBytes {
		return c.JSON(http.StatusBadRequest, oauthError("invalid_client_metadata", "the registration body is unreadable or too large"))
	}
	var m provider.ClientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return c.JSON(http.StatusBadRequest, oauthError("invalid_client_metadata", "the registration body is not a JSON object"))
	}
	cl, secret, err := s.core.CreateClient(ctx, t.ID, credentials.ClientDynamic, m)
	if fault.Is(err, fault.Invalid) {
		code := "invalid_client_metadata"
		if strings.HasPrefix(fault.Message(err), "redirect") {
			code = "invalid_redirect_uri"
		}
		return c.JSON(http.StatusBadRequest, oauthError(code, fault.Message(err)))
	}
	if err != nil {
		s.log.ErrorContext(ctx, "register client", "tenant", t.ID, "err", err)
		return c.JSON(http.StatusServiceUnavailable, oauthError("temporarily_unavailable", "registration failed; retry"))
	}
	created = true
	s.log.InfoContext(ctx, "client registered", "tenant", t.ID, "client", cl.ID, "redirect_uris", cl.RedirectURIs)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, registrationResponse(cl, secret))
}

func registrationResponse(cl credentials.Client, secret string) RegistrationResponse {
	r := RegistrationResponse{ClientID: cl.ID, ClientSecret: secret, ClientIDIssuedAt: cl.CreatedAt.Unix(), ClientName: cl.Name,
		ClientURI: cl.ClientURI, RedirectURIs: cl.RedirectURIs, GrantTypes: cl.GrantTypes, ResponseTypes: []string{"code"},
		TokenEndpointAuthMethod: cl.AuthMethod, Scope: strings.Join(cl.Scopes, " ")}
	if secret != "" {
		never := int64(0)
		r.ClientSecretExpiresAt = &never
	}
	return r
}
