package oauth

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/identity"
)

// ServerMetadata is the RFC 8414 authorization server metadata of a tenant.
type ServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	ServiceDocumentation                       string   `json:"service_documentation,omitempty"`
}

// ResourceMetadata is the RFC 9728 metadata of a tenant's MCP endpoint.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

var authMethods = []string{"none", "client_secret_basic", "client_secret_post"}

// Metadata returns the authorization server metadata of tenant slug.
func (s *Server) Metadata(slug string) ServerMetadata {
	iss := s.urls.Issuer(slug)
	return ServerMetadata{
		Issuer:                                     iss,
		AuthorizationEndpoint:                      iss + "/oauth/authorize",
		TokenEndpoint:                              iss + "/oauth/token",
		RegistrationEndpoint:                       iss + "/oauth/register",
		RevocationEndpoint:                         iss + "/oauth/revoke",
		ScopesSupported:                            identity.ToolScopes,
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          authMethods,
		RevocationEndpointAuthMethodsSupported:     authMethods,
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationResponseIssParameterSupported: true,
	}
}

func (s *Server) resourceDoc(t identity.Tenant) ResourceMetadata {
	return ResourceMetadata{Resource: s.urls.Resource(t.Slug), AuthorizationServers: []string{s.urls.Issuer(t.Slug)},
		ScopesSupported: identity.ToolScopes, BearerMethodsSupported: []string{"header"}, ResourceName: t.Name + " on Visor"}
}

func (s *Server) serverMetadata(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, s.Metadata(t.Slug))
}

func (s *Server) resourceMetadata(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, s.resourceDoc(t))
}

// noRootMetadata answers the host-root well-known URLs (RFC 8414, RFC 9728
// and OIDC discovery) with 404 and where to look instead, whatever the
// number of tenants. Each tenant is its own issuer, {base}/t/{slug}, and
// both RFCs require the document's issuer or resource to be the one the
// URL was formed from, which at the root would be {base}: no tenant's.
// Clients find the right document from the MCP endpoint's 401 challenge.
func (s *Server) noRootMetadata(c echo.Context) error {
	return c.JSON(http.StatusNotFound, oauthError("not_found", "Visor runs one authorization server per tenant; read "+
		s.urls.Base+"/.well-known/oauth-protected-resource/t/{tenant}/mcp or "+s.urls.Base+"/.well-known/oauth-authorization-server/t/{tenant}"))
}

// noOpenID answers the OpenID Connect discovery paths with 404: Visor
// issues no ID tokens, so it cannot fill in the fields OIDC Discovery
// requires (jwks_uri, subject_types_supported,
// id_token_signing_alg_values_supported), and a partial document would
// mislead a client. Clients fall back to the RFC 8414 document.
func (s *Server) noOpenID(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	return c.JSON(http.StatusNotFound, oauthError("not_found", "Visor is an OAuth 2.1 authorization server, not an OpenID provider; read "+
		s.urls.Base+"/.well-known/oauth-authorization-server/t/"+t.Slug))
}

func oauthError(code, desc string) map[string]string {
	return map[string]string{"error": code, "error_description": desc}
}
