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

// rootResourceMetadata answers the host-root well-known URL that some
// clients try first. With one tenant it describes that tenant's endpoint;
// with several it cannot know which one is meant and says where to look.
func (s *Server) rootResourceMetadata(c echo.Context) error {
	ts, err := s.identity.Store().ListTenants(c.Request().Context())
	if err != nil {
		s.log.ErrorContext(c.Request().Context(), "list tenants for root resource metadata", "err", err)
		return c.JSON(http.StatusServiceUnavailable, oauthError("temporarily_unavailable", "retry later"))
	}
	if len(ts) == 1 {
		return c.JSON(http.StatusOK, s.resourceDoc(ts[0]))
	}
	return c.JSON(http.StatusNotFound, oauthError("not_found",
		"this host serves many tenants; read "+s.urls.Base+"/.well-known/oauth-protected-resource/t/{tenant}/mcp"))
}

func oauthError(code, desc string) map[string]string {
	return map[string]string{"error": code, "error_description": desc}
}
