package auth

import (
	"github.com/visorhq/visor/services/identity"
)

// RoleScopes splits requested scopes into those a member of role holds
// (identity.Role.Bound, from the authority matrix) and those withheld: a
// client can never get more than its member has. It bounds an OAuth
// token's scopes by its member's current role, both when the token is used
// (auth/oauth.Server.ResolveToken) and when the live hub re-checks an open stream
// (Validity.Refresh), and a key's scopes by its creator's.
func RoleScopes(role identity.Role, requested []string) (granted, withheld []string) {
	return role.Bound(requested)
}
