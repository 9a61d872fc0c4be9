package oauth

import (
	"slices"

	"github.com/visorhq/visor/services/identity"
)

// scopeWords says in plain words what each scope unlocks, for the consent
// page.
var scopeWords = map[string]string{
	identity.ScopeToolsRead:  "see the tools you may use and call the ones that only read (tasks, memory, agents' status)",
	identity.ScopeToolsWrite: "call tools that create or change things: tasks, memory, messages to AI employees",
	identity.ScopeToolsAdmin: "call administrative tools, such as creating, changing or removing AI employees",
}

type scopeLine struct{ Name, Words string }

func describeScopes(scopes []string) []scopeLine {
	out := make([]scopeLine, 0, len(scopes))
	for _, s := range scopes {
		out = append(out, scopeLine{Name: s, Words: scopeWords[s]})
	}
	return out
}

// viewerScopes are what a member who cannot manage the tenant (a viewer)
// may grant a client: reading only. Members who can manage may grant
// every scope.
var viewerScopes = []string{identity.ScopeToolsRead}

// grantable reports whether a member of role may grant scope.
func grantable(role identity.Role, scope string) bool {
	return role.CanManage() || slices.Contains(viewerScopes, scope)
}

// roleScopes splits requested scopes into those a member of role may grant
// and those withheld: a client can never get more than its member has.
func roleScopes(role identity.Role, requested []string) (granted, withheld []string) {
	for _, s := range requested {
		if grantable(role, s) {
			granted = append(granted, s)
		} else {
			withheld = append(withheld, s)
		}
	}
	return granted, withheld
}
