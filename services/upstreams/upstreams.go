// Package upstreams is a tenant's registry of upstream MCP servers and the
// four stable entry points that reach their tools: mcp_tool_search,
// mcp_tool_inspect, mcp_tool_call and mcp_manage.
//
// Upstream tools are never merged into Visor's tools/list: a caller
// searches for them, reads one tool's schema and calls it by name, so its
// list never goes stale when an upstream changes. The one policy governs
// them as mcp__<server>__<tool> (tools.DecideUpstream); every call is an
// audit row of the call pipeline. A server is remote (Streamable HTTP, or
// the older HTTP+SSE) or stdio (a command in a container on a worker); the
// code that speaks to servers implements Connector outside this package.
// Secrets (environment values, static headers, OAuth client secrets and
// tokens) are sealed by services/secrets and only ever named.
// docs/upstream-mcp.md is the operator's guide.
package upstreams

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Transport is how Visor reaches a server.
type Transport string

// The transports.
const (
	StreamableHTTP Transport = "streamable_http"
	SSE            Transport = "sse" // the older HTTP+SSE transport
	Stdio          Transport = "stdio"
)

// Remote reports whether t reaches a server over HTTP.
func (t Transport) Remote() bool { return t == StreamableHTTP || t == SSE }

// AuthKind is how Visor authenticates to a server, in its own name: the
// caller's Visor credential is never sent upstream.
type AuthKind string

// The kinds of upstream authentication. Static headers (a bearer token
// kept as the secret header "Authorization") go with any kind.
const (
	AuthNone              AuthKind = "none"
	AuthOAuth             AuthKind = "oauth"              // authorization code with PKCE, through the dashboard
	AuthClientCredentials AuthKind = "client_credentials" // machine to machine
)

// How Visor registered as a client of an authorization server.
const (
	RegisteredByDocument  = "metadata_document" // its Client ID Metadata Document's URL is the client id
	RegisteredDynamically = "dynamic"           // RFC 7591 dynamic client registration
)

// Auth is a server's OAuth client settings.
type Auth struct {
	Kind AuthKind `json:"kind"`
	// PerMember keeps one token per member (who connected) rather than one
	// for the tenant.
	PerMember bool `json:"per_member,omitempty"`
	// ClientID is the client id Visor registered as (by dynamic
	// registration, a Client ID Metadata Document, or given by the
	// operator). The client secret, when any, is a sealed secret.
	ClientID string   `json:"client_id,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	// Issuer, AuthorizationEndpoint, TokenEndpoint and RevocationEndpoint
	// are the authorization server's metadata, discovered at connect.
	Issuer                string `json:"issuer,omitempty"`
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	TokenEndpoint         string `json:"token_endpoint,omitempty"`
	RevocationEndpoint    string `json:"revocation_endpoint,omitempty"`
	// RegistrationEndpoint (RFC 7591), MetadataDocuments (the server takes
	// a Client ID Metadata Document's URL as a client id) and
	// CodeChallengeMethods are discovered too, for the authorization code
	// flow.
	RegistrationEndpoint string   `json:"registration_endpoint,omitempty"`
	MetadataDocuments    bool     `json:"client_id_metadata_document_supported,omitempty"`
	CodeChallengeMethods []string `json:"code_challenge_methods_supported,omitempty"`
	// Registration is how ClientID came to be: RegisteredByDocument,
	// RegisteredDynamically, or "" when the operator gave it. RedirectURI
	// is the redirect URI it was registered with.
	Registration string `json:"registration,omitempty"`
	RedirectURI  string `json:"redirect_uri,omitempty"`
	// Resource is the RFC 8707 resource indicator sent with every request
	// for a token: the server's canonical URL.
	Resource string `json:"resource,omitempty"`
}

// Server is one upstream MCP server of a tenant.
type Server struct {
	ID        uuid.UUID `json:"id"`
	TenantID  uuid.UUID `json:"-"`
	Name      string    `json:"name"`
	Transport Transport `json:"transport"`
	// URL is a remote server's endpoint.
	URL string `json:"url,omitempty"`
	// Image and Command run a stdio server; AllowHosts are the only hosts
	// its container may reach (none: no network).
	Image      string   `json:"image,omitempty"`
	Command    []string `json:"command,omitempty"`
	AllowHosts []string `json:"allow_hosts,omitempty"`
	Auth       Auth     `json:"auth"`
	Enabled    bool     `json:"enabled"`
	Limits     Limits   `json:"limits"`
	// Description is the operator's note.
	Description string `json:"description"`
	// Version grows with every change of the server's settings or
	// secrets; a kept connection of an older version is closed.
	Version     int64      `json:"version"`
	RefreshedAt *time.Time `json:"refreshed_at"`
	// LastError is what the last refresh failed with ("" when it worked).
	LastError string    `json:"last_error"`
	ToolCount int       `json:"tool_count"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Secrets names the server's secrets; the values never leave the
	// service.
	Secrets []SecretName `json:"secrets"`
}

// Limits bound what one server may cost Visor.
type Limits struct {
	// Timeout bounds one call (and a refresh's listing).
	Timeout time.Duration `json:"-"`
	// MaxConcurrent bounds the calls running at once on one replica.
	MaxConcurrent int `json:"max_concurrent"`
	// MaxResultBytes caps one result's content and structured content.
	MaxResultBytes int `json:"max_result_bytes"`
}

// MarshalJSON writes the timeout in milliseconds.
func (l Limits) MarshalJSON() ([]byte, error) {
	type plain Limits
	return json.Marshal(struct {
		TimeoutMS int64 `json:"timeout_ms"`
		plain
	}{l.Timeout.Milliseconds(), plain(l)})
}

// JSONSchema describes the JSON encoding, for API documents.
func (Limits) JSONSchema() map[string]any {
	n := func(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }
	return map[string]any{"type": "object", "required": []string{"timeout_ms", "max_concurrent", "max_result_bytes"},
		"properties": map[string]any{
			"timeout_ms": n("Time one call may take."), "max_concurrent": n("Calls at once on one replica."),
			"max_result_bytes": n("Bytes of one result."),
		}}
}

// SecretKind says what a secret is for.
type SecretKind string

// The kinds of secret.
const (
	SecretEnv          SecretKind = "env"           // an environment variable of a stdio server
	SecretHeader       SecretKind = "header"        // a header sent to a remote server
	SecretClientSecret SecretKind = "client_secret" // the OAuth client secret
)

// SecretName names one secret without its value.
type SecretName struct {
	Kind SecretKind `json:"kind"`
	Name string     `json:"name"`
	Set  bool       `json:"set"`
}

// Secret is one sealed secret of a server.
type Secret struct {
	Kind   SecretKind
	Name   string
	Sealed string
}

// Tool is one tool a server listed.
type Tool struct {
	// Server is the server's name.
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema and Annotations are absent when the server gave none.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// FullName is the name the policy knows the tool by: mcp__<server>__<tool>.
func FullName(server, tool string) string { return "mcp__" + server + "__" + tool }

// Result is an upstream tool's answer, passed through: its content array
// and structured content as the server sent them, and whether the server
// marked it an error.
type Result struct {
	Content    json.RawMessage
	Structured json.RawMessage
	IsError    bool
}

// Token is an OAuth token Visor holds for a server, sealed.
type Token struct {
	TenantID, ServerID uuid.UUID
	// MemberID is uuid.Nil for the tenant's own token.
	MemberID      uuid.UUID
	SealedAccess  string
	SealedRefresh string
	ExpiresAt     *time.Time
	Scope         string
}

// State is a member's pending Connect: the authorization code flow begun
// in the dashboard, waiting for the authorization server to send the
// member back.
type State struct {
	TenantID uuid.UUID
	// StateHash is the SHA-256 (hex) of the state parameter sent.
	StateHash string
	ServerID  uuid.UUID
	// MemberID began the flow; TokenMemberID is whose token it makes
	// (uuid.Nil: the tenant's).
	MemberID, TokenMemberID uuid.UUID
	// SessionHash is the SHA-256 (hex) of the dashboard session's id: the
	// callback must come back in the same session.
	SessionHash    string
	SealedVerifier string
	RedirectURI    string
	ExpiresAt      time.Time
}
