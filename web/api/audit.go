package api

import (
	"encoding/json"
	"net/http"
	"strconv"
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
	// Source is where the action came from: mcp, admin_api or cli.
	Source string `json:"source"`
	// Action, Object and Change describe an operator action: the admin
	// API operation (the CLI uses the same names), what it was done to,
	// and the change with every secret masked.
	Action string `json:"action,omitempty"`
	Object string `json:"object,omitempty"`
	Change string `json:"change,omitempty"`
}

// AuditList is the body of GET /tenants/{tenant}/audit. Pass next_before as
// before to read the next (older) page.
type AuditList struct {
	Events     []AuditEvent `json:"events"`
	NextBefore *uuid.UUID   `json:"next_before,omitempty"`
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
			Summary:  "List audit rows, newest first; filters: principal_kind, principal_id, tool, outcome, event_type, source, action, object, since, until, before, limit",
			Response: AuditList{}, Handler: r.list},
		{Method: http.MethodGet, Path: p + "/export", ID: "exportAudit", Tag: "audit", Needs: identity.ReadAudit,
			Summary: "Export every matching audit row as JSON Lines (same filters as listAudit)", Handler: r.export},
	}
}

// filter reads the query parameters shared by list and export.
func auditFilter(c echo.Context) (audit.Filter, error) {
	q := c.QueryParams()
	f := audit.Filter{PrincipalKind: q.Get("principal_kind"), PrincipalID: q.Get("principal_id"), Tool: q.Get("tool"),
		Outcome: q.Get("outcome"), Event: q.Get("event_type"), Source: q.Get("source"), Action: q.Get("action"), Object: q.Get("object")}
	for name, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return f, fault.New(fault.Invalid, "%s must be an RFC 3339 time, like 2026-01-02T15:04:05Z", name)
			}
			*dst = t
		}
	}
	if v := q.Get("before"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, fault.New(fault.Invalid, "before must be an audit row id")
		}
		f.Before = id
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return f, fault.New(fault.Invalid, "limit must be 1-1000")
		}
		f.Limit = n
	}
	return f, nil
}

func (r auditAPI) list(c echo.Context) error {
	f, err := auditFilter(c)
	if err != nil {
		return err
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	rows, err := r.store.List(c.Request().Context(), tenant(c).ID, f)
	if err != nil {
		return err
	}
	out := AuditList{Events: mapSlice(rows, auditOut)}
	if len(rows) == f.Limit {
		last := rows[len(rows)-1].ID
		out.NextBefore = &last
	}
	return c.JSON(http.StatusOK, out)
}

// export streams every matching row as one JSON object per line, newest
// first, reading a page at a time.
func (r auditAPI) export(c echo.Context) error {
	f, err := auditFilter(c)
	if err != nil {
		return err
	}
	f.Limit = 1000
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="audit.jsonl"`)
	enc := json.NewEncoder(w)
	started := false
	for {
		rows, err := r.store.List(c.Request().Context(), tenant(c).ID, f)
		if err != nil {
			if !started {
				return err
			}
			return nil // headers are out: the truncated export is all we can say
		}
		if !started {
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, e := range rows {
			if err := enc.Encode(auditOut(e)); err != nil {
				return nil
			}
		}
		w.Flush()
		if len(rows) < f.Limit {
			return nil
		}
		f.Before = rows[len(rows)-1].ID
	}
}
