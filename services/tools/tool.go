// Package tools is Visor's tool declaration surface and its one policy.
//
// A tool is declared once, as a Tool in a Registry: its name, description,
// parameters, minimum scope, family, the gate that hides it, the permission
// flag that refuses it per call, annotations, handler and an optional
// deprecated-alias target. Decide is the single function that says whether a
// caller may see and call a tool; tools/list and tools/call both ask it, so
// they can never disagree. Families that arrive later are filtered by the
// metadata they declare, without new policy code.
package tools

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// Param is one parameter of a tool. Every parameter is a JSON value of Type.
type Param struct {
	Name        string
	Type        string // JSON Schema type: string, integer, number, boolean, array, object
	Description string
	Required    bool
	// Secret marks a value that never reaches the audit trail, not even in
	// the arguments digest.
	Secret bool
	// Audit, for a Secret parameter, is the harmless summary of its value
	// the audit row keeps instead (AuditNote).
	Audit AuditAs
}

// AuditAs says what the audit row keeps of a secret parameter's value.
type AuditAs string

// The summaries a secret parameter may leave in the audit row.
const (
	AuditNothing AuditAs = ""
	AuditChars   AuditAs = "chars" // its length in characters
	AuditHash    AuditAs = "hash"  // a SHA-256 of it, keyed by the tenant
	AuditHost    AuditAs = "host"  // a URL's host, nothing else of it
)

// Annotations are the MCP tool annotations. Nil pointers are left unsaid.
type Annotations struct {
	Title       string
	ReadOnly    bool
	Destructive *bool
	Idempotent  bool
	OpenWorld   *bool
}

// Tool is one declared tool.
type Tool struct {
	Name        string
	Description string
	Params      []Param
	// Scope is the minimum scope a non-employee caller must hold.
	Scope string
	// Family groups tools for docs and dashboards (the name prefix).
	Family string
	// Gate is the filter-table row that hides the tool when it is off.
	Gate Gate
	// ProcessAgent marks a tool that acts for the calling process's own AI
	// employee: hidden from, and refused to, every non-employee caller.
	ProcessAgent bool
	// Permission is the [permissions] flag that refuses the tool per call
	// while keeping it listed. PermissionIf, when set, narrows the check to
	// calls whose arguments it reports true for (tasks_create with a schedule).
	Permission   Permission
	PermissionIf func(args map[string]any) bool
	Annotations  Annotations
	Handler      Handler
	// DeprecatedFor names the tool this one is a deprecated alias of. An
	// alias declares no handler or params: it is listed with a
	// "[deprecated → new]" prefix and dispatches to the new tool.
	DeprecatedFor string
	// StringScalars lets integer and boolean parameters also arrive as
	// strings ("12", "true"/"false"); CheckArgs converts them.
	StringScalars bool
	// ArgsNote, when set, returns facts the call's audit row keeps from its
	// arguments before the tool runs (what a call is about, such as the
	// upstream server and tool it names; never a value a caller typed as
	// data), so the row says them even when the tool never runs.
	ArgsNote func(args map[string]any) map[string]any
}

// Call is one invocation of a tool, after the policy allowed it.
type Call struct {
	Subject *Subject
	// ID is the call's own id, the id of its audit row (uuid.Nil outside
	// the endpoint): what a write outside any round names as its source.
	ID uuid.UUID
	// Name is the name the caller used (an alias's, for a deprecated name).
	Name string
	Args map[string]any
	// Raw is the arguments object as received.
	Raw json.RawMessage
	// Progress, when the client asked for progress (it sent a progress
	// token), sends it a progress notification; nil otherwise.
	Progress func(progress, total float64, message string)
}

// Report sends a progress notification when the client asked for them.
func (c Call) Report(progress, total float64, message string) {
	if c.Progress != nil {
		c.Progress(progress, total, message)
	}
}

// Principal is the caller.
func (c Call) Principal() identity.Principal { return c.Subject.Principal }

// Result is what a handler returns on success. Text is what the model
// reads; Structured, when non-nil, is sent as structuredContent too.
// Images, when any, are sent as image content blocks before the text.
type Result struct {
	Text       string
	Structured any
	Images     []Image
	// Event, when set, is the call's audit event in place of the usual
	// one (a script run on the host is audited as such).
	Event string
	// Note, when set, is added to the call's audit row (its change
	// summary): facts about the call such as a row count or a duration,
	// never the data the call returned.
	Note map[string]any
	// Content, when set, is the answer's whole MCP content array, passed
	// through as another server sent it (text, images, audio, resource
	// links); Text and Images are then not sent.
	Content json.RawMessage
	// IsError marks an answer in which the tool reports its own failure
	// (an upstream server's isError); the audit row records a tool error.
	IsError bool
}

// Image is one image content block.
type Image struct {
	MIMEType string // e.g. image/png
	Data     []byte
}

// EventError is a tool error whose call is audited under its own event.
type EventError struct {
	Event string
	Err   error
}

func (e *EventError) Error() string { return e.Err.Error() }

func (e *EventError) Unwrap() error { return e.Err }

// NotedError is a tool error whose audit row also keeps Note (as
// Result.Note does for a success).
type NotedError struct {
	Note map[string]any
	Err  error
}

func (e *NotedError) Error() string { return e.Err.Error() }

func (e *NotedError) Unwrap() error { return e.Err }

// Handler runs a tool. An error carrying a fault code the caller can act on
// (Invalid, NotFound, Conflict, Forbidden, TooLarge, RateLimited,
// Unavailable) becomes an isError result with the fault's safe message; any
// other error is a JSON-RPC internal error.
type Handler func(ctx context.Context, c Call) (*Result, error)
