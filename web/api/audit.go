package api

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
)

// AuditResource serves the tenant's audit trail (tool calls, refusals and
// operator actions): a filtered, paged list and a JSONL export of every
// matching row.
func AuditResource(store audit.Store) Resource { return auditAPI{store: store} }

type auditAPI struct{ store audit.Store }

// AuditEvent is one audit row as the admin API shows it.
type AuditEvent struct {
	ID            uuid.UUID `json:"id"`
	At            time.Time `json:"at"`
	PrincipalKind string    `json:"principal_kind"`
	PrincipalID   string    `json:"principal_id"`
	Tool          string    `json:"tool"`
	ArgsDigest    string    `json:"args_digest"`
	Outcome       string    `json:"outcome"`
	Code          int64     `json:"code"`
	EventType     string    `json:"event_type"`
	Message       string    `json:"message,omitempty"`
	LatencyUS     int64     `json:"latency_us"`
	// Source is where the action came from: mcp, admin_api, cli or dashboard.
	Source string `json:"source"`
	// Action, Object and Change describe an operator action: the admin
	// API operation (the CLI uses the same names), what it was done to,
	// and the change with every secret masked.
	Action string `json:"action,omitempty"`
	Object string `json:"object,omitempty"`
	Change string `json:"change,omitempty"`
}

// AuditList is the body of GET /tenants/{tenant}/audit. Pass next_cursor as
// cursor to read the next (older) page.
type AuditList struct {
	Events     []AuditEvent `json:"events"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

func auditOut(e audit.Entry) AuditEvent {
	return AuditEvent{ID: e.ID, At: e.At, PrincipalKind: e.PrincipalKind, PrincipalID: e.PrincipalID, Tool: e.Tool,
		ArgsDigest: e.ArgsDigest, Outcome: e.Outcome, Code: e.Code, EventType: e.Event, Message: e.Message,
		LatencyUS: e.Latency.Microseconds(), Source: source(e.Source), Action: e.Action, Object: e.Object, Change: e.Change}
}

func source(s string) string {
	if s == "" {
		return audit.SourceMCP
	}
	return s
}

func (r auditAPI) Operations() []Operation {
	p := "/tenants/:tenant/audit"
	return []Operation{
		{Method: http.MethodGet, Path: p, ID: "listAudit", Tag: "audit", Needs: identity.ReadAudit,
			Summary: "List audit rows, newest first, filtered", Query: Paged(auditFilters...),
			Response: AuditList{}, Handler: r.list},
		{Method: http.MethodGet, Path: p + "/export", ID: "exportAudit", Tag: "audit", Needs: identity.ReadAudit,
			Summary: "Export every matching audit row as JSON Lines or CSV, newest first (the filters of listAudit, no paging)",
			Query: append(slices.Clone(auditFilters), QueryParam{Name: "format", Type: "string", Enum: []string{ExportJSONL, ExportCSV},
				Description: "jsonl (the default): one JSON object per line; csv: a header row, then one row per event."}),
			ResponseType: "application/x-ndjson, text/csv", Handler: r.export},
	}
}

// auditFilters are the query parameters list and export share.
var auditFilters = []QueryParam{
	{Name: "principal_kind", Type: "string", Enum: []string{string(identity.KindOperator), string(identity.KindEmployee), string(identity.KindExternal)},
		Description: "Who acted: an operator (key, session, platform token or the CLI), an AI employee, or an OAuth client."},
	{Name: "principal_id", Type: "string", Description: "The principal's id as rows show it, e.g. agent:<uuid> or operator:key:<uuid>."},
	{Name: "tool", Type: "string", Description: "A tool name."},
	{Name: "outcome", Type: "string", Enum: []string{audit.OutcomeOK, audit.OutcomeToolError, audit.OutcomeRejected, audit.OutcomeRefused, audit.OutcomeFailed},
		Description: "How it ended."},
	{Name: "event_type", Type: "string", Description: "The audit event, e.g. scope_denied or capability_denied."},
	{Name: "source", Type: "string", Enum: []string{audit.SourceMCP, audit.SourceAdminAPI, audit.SourceCLI, audit.SourceDashboard}, Description: "Where the action came from."},
	{Name: "action", Type: "string", Description: "An operator action: the admin API operation id, e.g. createAgent."},
	{Name: "object", Type: "string", Description: "What an operator action was done to."},
	{Name: "since", Type: "string", Format: "date-time", Description: "Rows at or after this RFC 3339 time."},
	{Name: "until", Type: "string", Format: "date-time", Description: "Rows before this RFC 3339 time."},
}

// maxFilterLen bounds one filter's value: longer ones match nothing a
// row can hold.
const maxFilterLen = 512

// auditFilter reads the query parameters shared by list and export.
func auditFilter(c echo.Context) (audit.Filter, error) { return AuditFilter(c.QueryParams()) }

// AuditFilter reads the audit filters from query parameters (the names of
// listAudit's), refusing a time that is not RFC 3339 with fault.Invalid.
// The dashboard's audit page reads the same parameters.
func AuditFilter(q url.Values) (audit.Filter, error) {
	f := audit.Filter{PrincipalKind: q.Get("principal_kind"), PrincipalID: q.Get("principal_id"), Tool: q.Get("tool"),
		Outcome: q.Get("outcome"), Event: q.Get("event_type"), Source: q.Get("source"), Action: q.Get("action"), Object: q.Get("object")}
	for _, p := range auditFilters {
		if len(q.Get(p.Name)) > maxFilterLen {
			return f, fault.New(fault.Invalid, "%s is longer than %d bytes", p.Name, maxFilterLen)
		}
	}
	for name, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return f, fault.New(fault.Invalid, "%s must be an RFC 3339 time, like 2026-01-02T15:04:05Z", name)
			}
			*dst = t
		}
	}
	return f, nil
}

func (r auditAPI) list(c echo.Context) error {
	f, err := auditFilter(c)
	if err != nil {
		return err
	}
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	// The store pages by row id, newest first: the cursor is the last id.
	if _, err := page.Decode(&f.Before); err != nil {
		return err
	}
	f.Limit = page.Limit + 1 // one more tells whether another page follows
	rows, err := r.store.List(c.Request().Context(), tenant(c).ID, f)
	if err != nil {
		return err
	}
	out := AuditList{}
	if len(rows) > page.Limit {
		rows = rows[:page.Limit]
		out.NextCursor = EncodeCursor(rows[len(rows)-1].ID)
	}
	out.Events = mapSlice(rows, auditOut)
	return c.JSON(http.StatusOK, out)
}

func (r auditAPI) export(c echo.Context) error {
	f, err := auditFilter(c)
	if err != nil {
		return err
	}
	format, err := ExportFormatOf(c.QueryParam("format"))
	if err != nil {
		return err
	}
	return ExportAudit(c.Request().Context(), c.Response(), r.store, tenant(c).ID, f, format)
}
