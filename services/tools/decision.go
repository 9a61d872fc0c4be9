package tools

// JSON-RPC error codes of refusals and failures, as the MCP edge answers
// them and audit rows record them.
const (
	// CodeRefused is the JSON-RPC error code of every policy refusal of a
	// tools/call (docs/tools.md, "Errors").
	CodeRefused int64 = -32003
	// CodeUnknownTool is a tools/call of a name no tool has.
	CodeUnknownTool int64 = -32602
	// CodeInvalid is JSON-RPC's invalid params: a caller's mistake.
	CodeInvalid int64 = -32602
	// CodeInternal is JSON-RPC's internal error: the call failed on
	// Visor's side, and the audit row says so.
	CodeInternal int64 = -32603
)

// Audit event types. Every tools/call and every refusal is one audit row
// carrying one of these.
const (
	EventCall                  = "tool_call"               // the policy allowed the call; the row records its outcome
	EventPermissionDenied      = "permission_denied"       // a [permissions] flag refused it
	EventCapabilityDenied      = "capability_denied"       // a filter-table gate refused it
	EventScopeDenied           = "scope_denied"            // the caller lacks the tool's scope
	EventUnknownTool           = "unknown_tool"            // no tool has that name
	EventAgentAuthorityRefused = "agent_authority_refused" // agent_update on oneself
	EventRelationshipRefused   = "relationship_refused"    // a record relationship check refused it
	EventInvalidText           = "invalid_text"            // the request held a NUL or invalid UTF-8; refused at the edge
)

// Decision is the policy's answer for one (principal, tool, inputs).
type Decision struct {
	Allowed bool
	// Hidden is true when the refusal also keeps the tool out of tools/list
	// (a filter-table row); false for listed-but-refused gates.
	Hidden bool
	// Reason is the gate's own message, safe to show the caller.
	Reason string
	Code   int64
	Event  string
	// NeedScope is the scope that would lift a scope refusal, for an
	// external caller's step-up (HTTP 403 insufficient_scope).
	NeedScope string
}

// Visible reports whether the tool belongs in tools/list.
func (d Decision) Visible() bool { return d.Allowed || !d.Hidden }

var allow = Decision{Allowed: true, Event: EventCall}

func hide(event, reason string) Decision {
	return Decision{Hidden: true, Reason: reason, Code: CodeRefused, Event: event}
}

// Refuse returns a listed-but-refused decision, for checks a handler makes
// itself (record relationships, agent authority).
func Refuse(event, reason string) Decision {
	return Decision{Reason: reason, Code: CodeRefused, Event: event}
}

// RefusalError is a refusal a handler decides itself (record relationship
// checks, agent authority): the endpoint answers it like a policy refusal,
// with its JSON-RPC code and audit event.
type RefusalError struct{ Decision Decision }

func (e *RefusalError) Error() string { return e.Decision.Reason }

// Refused returns a RefusalError for event with a caller-safe reason.
func Refused(event, reason string) error { return &RefusalError{Decision: Refuse(event, reason)} }
