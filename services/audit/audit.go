// Package audit is Visor's append-only record of every tools/call, every
// refusal, and every change an operator makes through the admin API or the
// CLI. A row is durable before the caller hears the answer, and a
// side-effecting call's row is durable (as pending) before its tool runs;
// storage batches concurrent rows into shared commits so the trail does not
// serialize the endpoint.
package audit

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Outcomes of a recorded call.
const (
	OutcomePending   = "pending"    // a side-effecting tool is about to run; the row is completed with its outcome
	OutcomeOK        = "ok"         // the tool ran and succeeded
	OutcomeToolError = "tool_error" // the tool answered isError (validation, business rule)
	OutcomeRejected  = "rejected"   // an operator request was malformed or conflicted; nothing changed
	OutcomeRefused   = "refused"    // the policy or a gate refused the call
	OutcomeFailed    = "failed"     // a protocol or internal failure (JSON-RPC error)
)

// Sources: where a recorded action came from.
const (
	SourceMCP       = "mcp"       // a tools/call on the MCP endpoint
	SourceAdminAPI  = "admin_api" // an operation of the admin API
	SourceCLI       = "cli"       // a visor subcommand run against the database
	SourceDashboard = "dashboard" // a form posted in the operator dashboard
)

// NewID returns the id of a new audit row: a UUIDv7, whose leading bits
// are the time it was made, so a tenant's rows land at the end of the
// table's (tenant, id) key rather than anywhere in it. Random ids touch a
// different index page with every row; on a large trail that page is
// seldom in memory, and after each checkpoint its first change writes the
// whole page to the WAL again (docs/benchmarks.md, "Audit trail").
func NewID() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil { // the system's random source failed
		return uuid.New()
	}
	return id
}

// Entry is one audit row. A tool call's row never holds argument values:
// only a digest that leaves secret parameters out. An operator action's
// row names what was done (Action: the admin API's operation id, which the
// CLI reuses) to which Object, and carries the Change with every secret
// replaced by a marker; ArgsDigest is then the SHA-256 of Change.
type Entry struct {
	ID            uuid.UUID `json:"id"`
	TenantID      uuid.UUID `json:"tenant_id"`
	PrincipalKind string    `json:"principal_kind"`
	PrincipalID   string    `json:"principal_id"`
	Tool          string    `json:"tool"`
	ArgsDigest    string    `json:"args_digest"`
	Outcome       string    `json:"outcome"`
	// Code is what the edge answered: for a tool call (SourceMCP) the
	// JSON-RPC error code, 0 when the call got a result (a tool error
	// included); for an operator action the HTTP status (200, 403, …), the
	// CLI's being the status its error maps to.
	Code    int64         `json:"code"`
	Event   string        `json:"event_type"` // tools.Event*
	Message string        `json:"message,omitempty"`
	Latency time.Duration `json:"latency_us"`
	At      time.Time     `json:"at"`
	Source  string        `json:"source"`           // Source*; "" is SourceMCP
	Action  string        `json:"action,omitempty"` // operator actions: e.g. "updateMember"
	Object  string        `json:"object,omitempty"` // operator actions: e.g. "member:<id>"
	// Change is, for an operator action, the change with secrets masked;
	// for a tool call, the summary its secret parameters leave (a
	// character count, a host, a keyed hash; tools.AuditNote), or "".
	Change string `json:"change,omitempty"`
}

// Recorder writes audit rows.
type Recorder interface {
	// Record returns once e is durable, or with an error when it could not
	// be made durable; the caller must then not report success. Recording
	// an entry whose ID was recorded with OutcomePending completes that row
	// with e's outcome, code, event, message and latency; recording the ID
	// of a completed row again changes nothing. One entry's failure never
	// fails another's.
	Record(ctx context.Context, e Entry) error
}

// Filter selects audit rows for the admin API. Zero fields do not filter.
type Filter struct {
	PrincipalKind string
	PrincipalID   string
	Tool          string
	Outcome       string
	Event         string
	Source        string
	Action        string
	Object        string
	Since, Until  time.Time
	// Before pages backwards: rows strictly older than this row id's time.
	Before uuid.UUID
	Limit  int
}

// Store reads audit rows of one tenant, newest first.
type Store interface {
	List(ctx context.Context, tenantID uuid.UUID, f Filter) ([]Entry, error)
	// Facets counts every row matching f (its Before and Limit aside),
	// however many: by outcome, tool and event type, and in all.
	Facets(ctx context.Context, tenantID uuid.UUID, f Filter) (Facets, error)
}

// Facets counts the rows matching a filter by the value of a column.
type Facets struct {
	Total int64
	// Counts holds, per column ("outcome", "tool", "event_type"), each
	// value's count; values with none are left out.
	Counts []FacetCount
}

// FacetCount is how many rows hold Value in column Name.
type FacetCount struct {
	Name, Value string
	Count       int64
}

// Memory keeps rows in memory, for tests.
type Memory struct {
	mu      sync.Mutex
	entries []Entry
}

// Record appends e, or completes the pending row with e's ID.
func (m *Memory) Record(_ context.Context, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, old := range m.entries {
		if old.ID == e.ID && e.ID != uuid.Nil {
			if old.Outcome == OutcomePending {
				m.entries[i] = e
			}
			return nil
		}
	}
	m.entries = append(m.entries, e)
	return nil
}

// Entries returns a copy of every row recorded so far.
func (m *Memory) Entries() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Entry(nil), m.entries...)
}

// SortFacets orders counts most first, then by column and value.
func SortFacets(cs []FacetCount) {
	slices.SortFunc(cs, func(a, b FacetCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Value, b.Value))
	})
}
