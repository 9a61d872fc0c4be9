package ui

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/api"
)

// auditPage is how many rows the audit page shows at a time.
const auditPage = 50

func (d *Dashboard) auditRoutes(g *echo.Group) {
	g.GET("/audit", d.page(identity.ReadAudit, d.auditLog))
	g.GET("/audit/export", d.page(identity.ReadAudit, d.auditExport))
	g.GET("/audit/tail", d.page(identity.ReadAudit, d.auditTail))
}

// auditFilterNames are the filter fields of the audit page, in form order;
// they are the admin API's query parameters.
var auditFilterNames = []string{"principal_kind", "principal_id", "tool", "outcome", "event_type", "source", "action", "object", "since", "until"}

type auditData struct {
	Rows []audit.Entry
	// Form holds the filters as entered; Query is them as a query
	// string, for the export, tail and paging links.
	Form  map[string]string
	Query template.URL
	// Older is the cursor of the next (older) page, "" on the last.
	Older string
	// Paged is set when the page is not the newest.
	Paged                bool
	Kinds, Outcomes, Src []string
	// Filtered is set when any filter is chosen (the filters open).
	Filtered bool
	// Facets count every row the filters match, not only the page's,
	// per outcome, tool and event.
	Facets audit.Facets
	Range  string
}

// auditQuery reads the page's filters: the admin API's parameters, with
// since and until also accepted as a date and time without an offset
// ("2026-01-02 15:04"), read in the member's time zone (View.Zone).
func auditQuery(c echo.Context, zone *time.Location) (audit.Filter, url.Values, error) {
	q := url.Values{}
	for _, n := range auditFilterNames {
		if v := strings.TrimSpace(c.QueryParam(n)); v != "" {
			if n == "since" || n == "until" {
				if t, ok := parseLocalTime(v, zone); ok {
					v = t.UTC().Format(time.RFC3339)
				}
			}
			q.Set(n, v)
		}
	}
	if r := c.QueryParam("range"); r != "" && q.Get("since") == "" {
		d, ok := auditRanges[r]
		if !ok {
			return audit.Filter{}, nil, fault.New(fault.Invalid, "range must be 1h, 24h or 7d")
		}
		q.Set("since", time.Now().Add(-d).UTC().Format(time.RFC3339))
	}
	f, err := api.AuditFilter(q)
	return f, q, err
}

// auditRanges are the relative time ranges the page offers in one click.
var auditRanges = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

func (d *Dashboard) auditLog(c echo.Context, v *View) error {
	f, q, err := auditQuery(c, v.Zone())
	if err != nil {
		return err
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		if f.Before, err = uuid.Parse(cur); err != nil {
			return fault.New(fault.Invalid, "the page cursor is not valid; start from the newest rows")
		}
	}
	f.Limit = auditPage + 1
	rows, err := d.d.AuditLog.List(c.Request().Context(), v.Tenant.ID, f)
	if err != nil {
		return err
	}
	counted := f
	counted.Before, counted.Limit = uuid.Nil, 0
	facets, err := d.d.AuditLog.Facets(c.Request().Context(), v.Tenant.ID, counted)
	if err != nil {
		return err
	}
	data := auditData{Form: map[string]string{}, Query: template.URL(q.Encode()), Paged: f.Before != uuid.Nil,
		Kinds:    []string{string(identity.KindOperator), string(identity.KindEmployee), string(identity.KindExternal)},
		Outcomes: []string{audit.OutcomeOK, audit.OutcomeToolError, audit.OutcomeRejected, audit.OutcomeRefused, audit.OutcomeFailed, audit.OutcomePending},
		Src:      []string{audit.SourceMCP, audit.SourceAdminAPI, audit.SourceCLI, audit.SourceDashboard}}
	for _, n := range auditFilterNames {
		data.Form[n] = c.QueryParam(n)
		data.Filtered = data.Filtered || data.Form[n] != ""
	}
	data.Range = c.QueryParam("range")
	if len(rows) > auditPage {
		rows = rows[:auditPage]
		data.Older = rows[len(rows)-1].ID.String()
	}
	data.Rows, data.Facets = rows, facets
	v.Title, v.Nav, v.Data = "audit.title", "audit", data
	return d.f.Render(c, http.StatusOK, "audit", v)
}

// auditExport downloads every row matching the filters, as the admin
// API's export does (the same code).
func (d *Dashboard) auditExport(c echo.Context, v *View) error {
	f, _, err := auditQuery(c, v.Zone())
	if err != nil {
		return err
	}
	format, err := api.ExportFormatOf(c.QueryParam("format"))
	if err != nil {
		return err
	}
	return api.ExportAudit(c.Request().Context(), c.Response(), d.d.AuditLog, v.Tenant.ID, f, format)
}

// auditTail streams new rows matching the filters as server-sent events,
// for the page's live tail.
func (d *Dashboard) auditTail(c echo.Context, v *View) error {
	f, q, err := auditQuery(c, v.Zone())
	if err != nil {
		return err
	}
	since := api.SinceOf(c.Request().Header.Get("Last-Event-ID"), time.Now())
	query := template.URL(q.Encode())
	page := d.f.pages["audit"]
	return d.tailer.ServeEncoded(c.Request().Context(), c.Response(), v.Tenant.ID, f, since, func(e audit.Entry) ([]byte, error) {
		var b bytes.Buffer
		if err := page.ExecuteTemplate(&b, "audit-row", v.AuditRow(e, query)); err != nil {
			return nil, err
		}
		return json.Marshal(tailRow{ID: e.ID, HTML: b.String()})
	})
}

// tailRow is one event of the dashboard's live tail: the row as the
// table shows it.
type tailRow struct {
	ID   uuid.UUID `json:"id"`
	HTML string    `json:"html"`
}

// auditRow is one audit row with the page's view and filters, for the
// "audit-row" block the table and the live tail share.
type auditRow struct {
	*View
	E audit.Entry
	Q template.URL
}

// AuditRow pairs row e with the page's view and filter query q.
func (v *View) AuditRow(e audit.Entry, q template.URL) auditRow { return auditRow{View: v, E: e, Q: q} }

// Stamp formats t to the second, for the audit trail.
func (v *View) Stamp(t time.Time) string {
	if t.IsZero() {
		return v.Lang.FormatTime(t)
	}
	return v.Lang.FormatTimeIn(t, v.Zone(), true)
}

// Query joins a page's filter query and one more parameter. The result
// is an encoded query (url.Values.Encode), safe in a link as it is.
func (v *View) Query(base template.URL, name, value string) template.URL {
	q, _ := url.ParseQuery(string(base))
	q.Set(name, value)
	return template.URL(q.Encode())
}

// AuditRanges are the one-click time ranges, shortest first.
func (v *View) AuditRanges() []string { return []string{"1h", "24h", "7d"} }
