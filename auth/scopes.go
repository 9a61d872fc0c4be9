package auth

import (
	"slices"

	"github.com/visorhq/visor/services/identity"
)

// viewerScopes are what a member who cannot manage the tenant (a viewer)
// may grant a client: reading only. Members who can manage may grant
// every scope.
var viewerScopes = []string{identity.ScopeToolsRead}

// RoleScopes splits requested scopes into those a member of role may grant
// and those withheld: a client can never get more than its member has. It
// bounds an OAuth token's scopes by its member's current role, both when
// the token is used (auth/oauth) and when the live hub re-checks an open
// stream (Validity.Refresh).
func RoleScopes(role identity.Role, requested []string) (granted, withheld []string) {
	for _, s := range requested {
		if role.CanManage() || slices.Contains(viewerScopes, s) {
			granted = append(granted, s)
		} else {
			withheld = append(withheld, s)
		}
	}
	return granted, withheld
}
