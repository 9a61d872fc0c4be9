package oauth

import (
	"github.com/visorhq/visor/services/identity"
)

// ScopeWords says in plain words what each tool scope lets a client do. The
// consent page shows them next to the tools each scope unlocks, and the
// scope reference in docs/ is generated from them.
var ScopeWords = map[string]string{
	identity.ScopeToolsRead:  "see which tools you may use and call those that only read, such as the task list and your AI employees' status",
	identity.ScopeToolsWrite: "call tools that create or change work: tasks, routines, reminders and messages to AI employees",
	identity.ScopeToolsAdmin: "call administrative tools: create, change, spawn or remove AI employees",
}

// roleScopes splits requested scopes into those a member of role may grant
// and those withheld; the rule is the authority matrix's
// (identity.Role.Bound).
func roleScopes(role identity.Role, requested []string) (granted, withheld []string) {
	return role.Bound(requested)
}
