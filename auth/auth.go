// Package auth resolves the bearer credential of every MCP and admin request
// to an identity.Principal and answers the OAuth challenges of a
// protected resource: 401 with WWW-Authenticate pointing at the tenant's
// protected resource metadata, and 403 insufficient_scope for step-up.
//
// Credentials, told apart by their prefix:
//   - "vsk_…" API keys: operator keys → operator, agent keys → employee;
//   - "vsr_…" round tokens, minted for an agent and a task → employee with TaskID;
//   - anything else is tried as an OAuth access token → external.
package auth

import (
	"context"
	"strings"

	"github.com/visorhq/visor/services/identity"
)

type tenantKey struct{}

// WithTenant returns ctx carrying the tenant a request addresses.
func WithTenant(ctx context.Context, t identity.Tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// TenantFrom returns the tenant the request addresses, set by the
// middleware, if any.
func TenantFrom(ctx context.Context) (identity.Tenant, bool) {
	t, ok := ctx.Value(tenantKey{}).(identity.Tenant)
	return t, ok
}

// URLs names the public URLs of each tenant. Base is the external base URL
// without a trailing slash, e.g. "https://visor.example".
type URLs struct{ Base string }

// NewURLs returns URLs for base, trimming a trailing slash.
func NewURLs(base string) URLs { return URLs{Base: strings.TrimRight(base, "/")} }

// Issuer is the tenant's OAuth issuer identifier: {base}/t/{slug}.
func (u URLs) Issuer(slug string) string { return u.Base + "/t/" + slug }

// Resource is the tenant's MCP endpoint, the OAuth protected resource.
func (u URLs) Resource(slug string) string { return u.Issuer(slug) + "/mcp" }

// ResourceMetadata is the RFC 9728 path-inserted metadata URL of the
// tenant's MCP endpoint.
func (u URLs) ResourceMetadata(slug string) string {
	return u.Base + "/.well-known/oauth-protected-resource/t/" + slug + "/mcp"
}
