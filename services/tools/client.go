package tools

import (
	"github.com/visorhq/visor/services/identity"
)

// ClientTools returns the tools an OAuth client holding scopes sees in
// tenant t, in the registry's stable order: the consent page names them,
// and the scope reference in docs/ is built from the same answer. It is
// Decide's own answer for an external principal, so what a member is told
// at consent is what the client then lists.
func (r *Registry) ClientTools(t identity.Tenant, scopes []string) []*Tool {
	p := identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindExternal, Scopes: scopes}
	return r.Visible(&Subject{Principal: p, Tenant: t})
}
