package oauth

import (
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

// roleScopes splits requested scopes into those a member of role may grant
// and those withheld; the rule is the authority matrix's
// (identity.Role.Bound).
func roleScopes(role identity.Role, requested []string) (granted, withheld []string) {
	return role.Bound(requested)
}
