package oauth

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/validtext"
)

// ClientMetadata is the RFC 7591 client metadata Visor reads, from a
// registration request or a Client ID Metadata Document.
type ClientMetadata struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
	ClientSecret            string   `json:"client_secret,omitempty"`
}

// Limits on client metadata.
const (
	maxRedirectURIs   = 20
	maxURIBytes       = 2000
	maxClientNameSize = 200
)

// toClient validates m and returns the client it describes (without
// tenant, id or secret).
func (m ClientMetadata) toClient(kind credentials.ClientKind) (credentials.Client, error) {
	c := credentials.Client{Kind: kind, Name: strings.TrimSpace(m.ClientName), ClientURI: m.ClientURI}
	if len(c.Name) > maxClientNameSize {
		return c, fault.New(fault.Invalid, "client_name must be at most %d bytes", maxClientNameSize)
	}
	if m.ClientURI != "" {
		if u, err := url.Parse(m.ClientURI); err != nil || u.Scheme != "https" || len(m.ClientURI) > maxURIBytes {
			return c, fault.New(fault.Invalid, "client_uri must be an https URL")
		}
	}
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > maxRedirectURIs {
		return c, fault.New(fault.Invalid, "redirect_uris must list 1-%d URIs", maxRedirectURIs)
	}
	c.GrantTypes = m.GrantTypes
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range c.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return c, fault.New(fault.Invalid, "grant type %q is not supported; use authorization_code and refresh_token", clip(g))
		}
	}
	for _, r := range m.ResponseTypes {
		if r != "code" {
			return c, fault.New(fault.Invalid, "response type %q is not supported; use code", clip(r))
		}
	}
	c.AuthMethod = m.TokenEndpointAuthMethod
	if c.AuthMethod == "" {
		c.AuthMethod = credentials.AuthNone
	}
	switch c.AuthMethod {
	case credentials.AuthNone, credentials.AuthClientSecretBasic, credentials.AuthClientSecretPost:
	default:
		return c, fault.New(fault.Invalid, "token_endpoint_auth_method %q is not supported", clip(c.AuthMethod))
	}
	for _, r := range m.RedirectURIs {
		if err := ValidRedirectURI(r, c.AuthMethod == credentials.AuthNone); err != nil {
			return c, err
		}
	}
	c.RedirectURIs = slices.Clone(m.RedirectURIs)
	// Unknown scopes are dropped rather than refused (RFC 7591 §3.2.1 lets
	// the server register less than asked): clients ask for their own
	// names, and the registration answer says what was registered.
	c.Scopes = KnownScopes(m.Scope)
	if len(c.Scopes) == 0 {
		c.Scopes = slices.Clone(identity.ToolScopes)
	}
	return c, nil
}

// KnownScopes returns the tool scopes named in a space-separated scope
// string; anything else, the admin scopes included, is not an OAuth scope.
func KnownScopes(s string) []string {
	var out []string
	for _, sc := range strings.Fields(s) {
		if slices.Contains(identity.ToolScopes, sc) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// IsMetadataURL reports whether a client_id names a Client ID Metadata
// Document: an https URL.
func IsMetadataURL(id string) bool { return strings.HasPrefix(id, "https://") }

// checkMetadataURL applies the CIMD rules to a client_id URL: https, a
// host, a path, no fragment, user info or dot segments.
func checkMetadataURL(id string) (*url.URL, error) {
	u, err := url.Parse(id)
	if err != nil || len(id) > maxURIBytes || u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.Fragment != "" || strings.Contains(id, "#") || u.Path == "" || u.Path == "/" {
		return nil, fault.New(fault.Invalid, "a URL client_id must be an https URL with a path and no fragment or user info")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, fault.New(fault.Invalid, "a URL client_id must not contain dot segments")
		}
	}
	return u, nil
}

// ParseClientMetadataDocument parses and validates a Client ID Metadata
// Document fetched from id. The document must be storable text (UTF-8, no
// NUL), name id as its client_id,
// hold no secret, and authenticate with "none".
func ParseClientMetadataDocument(id string, body []byte) (credentials.Client, error) {
	if err := validtext.JSON(body); err != nil {
		return credentials.Client{}, fault.New(fault.Invalid, "the client metadata document %s", err)
	}
	var m ClientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return credentials.Client{}, fault.New(fault.Invalid, "the client metadata document is not a JSON object")
	}
	if m.ClientID != id {
		return credentials.Client{}, fault.New(fault.Invalid, "the document's client_id does not equal its URL")
	}
	if m.ClientSecret != "" {
		return credentials.Client{}, fault.New(fault.Invalid, "a client metadata document must not hold a client_secret")
	}
	if m.TokenEndpointAuthMethod != "" && m.TokenEndpointAuthMethod != credentials.AuthNone {
		return credentials.Client{}, fault.New(fault.Invalid, "a metadata document client must use token_endpoint_auth_method none")
	}
	c, err := m.toClient(credentials.ClientMetadataDocument)
	if err != nil {
		return c, err
	}
	c.ID = id
	if c.Name == "" {
		c.Name = id
	}
	return c, nil
}
