package ui

import (
	"fmt"
	"time"

	"github.com/visorhq/visor/services/identity"
)

// View is what every page template receives. Templates reach the catalog
// and the formatters through its methods: {{$.T "key" arg}}, {{$.Time t}},
// {{$.Int n}}, {{$.Cents n}}, and ask what the member may do with
// {{$.Can "manage_agents"}}.
type View struct {
	Lang   Lang
	Nonce  string // CSP nonce of the page's style and script elements
	CSRF   string // the form token; every form carries it as csrf_token
	Title  string // message key of the page title
	Tenant identity.Tenant
	// Member is the signed-in member; nil on the sign-in and error pages.
	Member *identity.Member
	// MemberZone is the time zone the member chose, "" for the tenant's.
	MemberZone string
	Principal  identity.Principal
	Nav        string // the path (below the dashboard) of the active menu entry
	Notice     string // message key of a notice to show (an action's result)
	Error      string // an error to show, already in the page's language
	// ErrorDetail is a service's own English message behind Error (or
	// behind an error page's line), shown after it marked as English.
	ErrorDetail string
	Data        any
	// Path is the request's path and query, for return_to fields.
	Path string
	// Object names what an action changed ("agent:<id>"), for its audit
	// row; action handlers set it.
	Object string

	cat     *Catalog
	failure string // why an action failed, for its audit row
	// loadNames reads the tenant's names for Who and Agent, once.
	loadNames func() *nameBook
	names     *nameBook
	// loadBadges counts what waits in the menu's entries, once.
	loadBadges func() map[string]int
	badges     map[string]int
}

// T returns message key in the page's language.
func (v *View) T(key string, args ...any) string { return v.cat.T(v.Lang, key, args...) }

// Time formats t for the page's language, in the tenant's time zone
// (UTC when it has none).
func (v *View) Time(t any) string {
	switch t := t.(type) {
	case time.Time:
		return v.Lang.FormatTimeIn(t, v.Zone(), false)
	case *time.Time:
		if t == nil {
			return v.Lang.FormatTime(time.Time{})
		}
		return v.Lang.FormatTimeIn(*t, v.Zone(), false)
	}
	return fmt.Sprint(t)
}

// Zone is where the page's times are written: the member's time zone
// when they chose one, else the tenant's setting, else UTC.
func (v *View) Zone() *time.Location {
	for _, tz := range []string{v.MemberZone, v.Tenant.Settings.TimeZone} {
		if tz == "" {
			continue
		}
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc
		}
	}
	return time.UTC
}

// Int formats an integer with thousands separators.
func (v *View) Int(n any) string {
	switch n := n.(type) {
	case int:
		return v.Lang.FormatInt(int64(n))
	case int64:
		return v.Lang.FormatInt(n)
	case int32:
		return v.Lang.FormatInt(int64(n))
	}
	return fmt.Sprint(n)
}

// Cents formats an amount in US cents.
func (v *View) Cents(n int64) string { return v.Lang.FormatCents(n) }

// Can reports whether the signed-in member may take action (one of
// identity.Actions): pages hide what it cannot do, and the action routes
// refuse it anyway.
func (v *View) Can(action string) bool {
	if v.Member == nil {
		return false
	}
	return v.Principal.Check(identity.Action(action)) == nil
}

// Dash returns the dashboard path of sub ("agents", "agents/x"), "" for the
// dashboard's home.
func (v *View) Dash(sub string) string {
	p := "/t/" + v.Tenant.Slug + "/dashboard"
	if sub != "" {
		p += "/" + sub
	}
	return p
}

// TenantPath returns a path under the tenant ("login", "logout").
func (v *View) TenantPath(sub string) string { return "/t/" + v.Tenant.Slug + "/" + sub }

// Langs lists the languages for the language menu.
func (v *View) Langs() []Lang { return Langs }

// LangName names language l in its own language.
func (v *View) LangName(l Lang) string { return v.cat.T(l, "lang.name") }

// Menu returns the dashboard's menu entries the member may open.
func (v *View) Menu() []MenuItem {
	var out []MenuItem
	for _, m := range menu() {
		if v.Can(string(m.Needs)) {
			out = append(out, m)
		}
	}
	return out
}

// MenuItem is one entry of the dashboard menu: its label (a message key),
// its path below the dashboard, the action needed to open it, and the
// group it is listed under (a message key).
type MenuItem struct {
	Label string
	Sub   string
	Needs identity.Action
	Group string
}

// MenuGroup is a heading of the menu and its entries.
type MenuGroup struct {
	Label string
	Items []MenuItem
}

// menu lists the dashboard's pages in menu order, each in its group: what
// needs a person now, the employees' work, who may act, and the tenant.
// A new page adds one line here, in the group it belongs to (or a new
// group, which appears in order of first use).
func menu() []MenuItem {
	return []MenuItem{
		{"nav.overview", "overview", identity.ReadTenant, "nav.group.triage"},
		{"nav.requests", "requests", identity.ReadTenant, "nav.group.triage"},
		{"nav.questions", "questions", identity.ReadTenant, "nav.group.triage"},
		{"nav.audit", "audit", identity.ReadAudit, "nav.group.triage"},
		{"nav.agents", "agents", identity.ReadTenant, "nav.group.work"},
		{"nav.board", "board", identity.ReadTenant, "nav.group.work"},
		{"nav.knowledge", "knowledge", identity.ReadTenant, "nav.group.work"},
		{"nav.responsibilities", "responsibilities", identity.ReadTenant, "nav.group.work"},
		{"nav.sandbox", "sandbox", identity.ReadTenant, "nav.group.work"},
		{"nav.computer", "computer", identity.ReadTenant, "nav.group.work"},
		{"nav.dbsources", "dbsources", identity.ReadTenant, "nav.group.work"},
		{"nav.mcpservers", "mcp-servers", identity.ReadTenant, "nav.group.work"},
		{"nav.workspaces", "workspaces", identity.ReadTenant, "nav.group.work"},
		{"nav.keys", "keys", identity.ReadTenant, "nav.group.access"},
		{"nav.members", "members", identity.ReadTenant, "nav.group.access"},
		{"nav.clients", "clients", identity.ReadTenant, "nav.group.access"},
		{"nav.live", "live", identity.ReadTenant, "nav.group.access"},
		{"nav.settings", "tenant", identity.ReadTenant, "nav.group.tenant"},
	}
}

// MenuGroups returns the menu the member may open, grouped.
func (v *View) MenuGroups() []MenuGroup {
	var out []MenuGroup
	at := map[string]int{}
	for _, m := range v.Menu() {
		i, ok := at[m.Group]
		if !ok {
			i = len(out)
			at[m.Group] = i
			out = append(out, MenuGroup{Label: m.Group})
		}
		out[i].Items = append(out[i].Items, m)
	}
	return out
}
