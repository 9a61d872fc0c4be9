package ui

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
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
	// Facets count the page's rows per outcome, tool and event.
	Facets []Facet
	Range  string
}

// auditQuery reads the page's filters: the admin API's parameters, with
// since and until also accepted as a browser's datetime-local value (UTC).
func auditQuery(c echo.Context) (audit.Filter, url.Values, error) {
	q := url.Values{}
	for _, n := range auditFilterNames {
		if v := c.QueryParam(n); v != "" {
			if n == "since" || n == "until" {
				if t, err := time.Parse("2006-01-02T15:04", v); err == nil {
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

// Facet is one value of a column and how many rows on the page hold it.
type Facet struct {
	Name, Value string
	Count       int
}

// facets counts the page's rows by outcome, tool and event, most first.
func facets(rows []audit.Entry) []Facet {
	idx := map[[2]string]int{}
	var out []Facet
	add := func(name, value string) {
		if value == "" {
			return
		}
		k := [2]string{name, value}
		if i, ok := idx[k]; ok {
			out[i].Count++
			return
		}
		idx[k] = len(out)
		out = append(out, Facet{Name: name, Value: value, Count: 1})
	}
	for _, r := range rows {
		add("outcome", r.Outcome)
		add("tool", r.Tool)
		add("event_type", r.Event)
	}
	slices.SortStableFunc(out, func(a, b Facet) int { return b.Count - a.Count })
	return out
}

func (d *Dashboard) auditLog(c echo.Context, v *View) error {
	f, q, err := auditQuery(c)
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
	data.Rows, data.Facets = rows, facets(rows)
	v.Title, v.Nav, v.Data = "audit.title", "audit", data
	return d.f.Render(c, http.StatusOK, "audit", v)
}

// auditExport downloads every row matching the filters, as the admin
// API's export does (the same code).
func (d *Dashboard) auditExport(c echo.Context, v *View) error {
	f, _, err := auditQuery(c)
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
	f, _, err := auditQuery(c)
	if err != nil {
		return err
	}
	since := api.SinceOf(c.Request().Header.Get("Last-Event-ID"), time.Now())
	return d.tailer.Serve(c.Request().Context(), c.Response(), v.Tenant.ID, f, since)
}

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
