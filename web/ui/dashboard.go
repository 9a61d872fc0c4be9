package ui

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/sandbox"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/web/api"
)

// Limiter counts events across replicas (storage/redisx.RateLimiter).
type Limiter interface {
	Allow(ctx context.Context, key string, n int, per time.Duration) (bool, error)
}

// Deps are what the dashboard pages use: the same domain services the
// admin API calls, so every page reaches the same rules.
type Deps struct {
	Identity *identity.Service
	// Sessions resolves the member session cookie (the authorization
	// server's, auth.Resolver.Sessions): one session for the sign-in,
	// consent and dashboard pages.
	Sessions auth.SessionResolver
	Audit    audit.Recorder
	// Tools and Subjects are the MCP endpoint's registry and policy
	// inputs: the settings editor previews an employee's tool list with
	// them.
	Tools    *tools.Registry
	Subjects *tools.Subjects
	// Limiter bounds each member's form posts, counted in Redis so every
	// replica draws on one budget; nil (or a limiter that does not answer)
	// counts in this replica's memory.
	Limiter Limiter
	// PostLimit bounds each member's form posts [120 per minute].
	PostLimit int
	Logger    *slog.Logger

	// AuditLog reads the audit trail for the audit page and the overview;
	// Tail follows it for the live tail.
	AuditLog audit.Store
	Tail     audit.Tail
	// Grants is the scoped-grants service: capability requests and grants.
	Grants *grants.Service
	// Streams lists who is connected now, on every replica.
	Streams live.Directory
	// Clients lists a tenant's OAuth clients and its members' consents;
	// OAuth deletes clients and revokes consents.
	Clients credentials.Store
	OAuth   OAuthAdmin
	// Responsibilities is the responsibilities service: responsibilities, their
	// runs and skips, and the questions their runs ask operators. Nil
	// leaves those pages out.
	Responsibilities *responsibilities.Service
	// Board is the task board service. Nil leaves its pages out.
	Board *board.Service
	// SandboxRuns is the log of script runs (execute_program).
	SandboxRuns sandbox.RunLog
	// Computer stops sessions and reads their latest masked screenshots;
	// ComputerSessions lists them. Nil leaves their pages out.
	Computer         *computer.Service
	ComputerSessions computer.SessionReader
	// DBSources is the tenant's database sources. Nil leaves its page out.
	DBSources *dbsources.Service
	// Knowledge is memories, wikis and beliefs. Nil leaves its page out.
	Knowledge *knowledge.Service
	// Workspaces is the employees' workspaces; nil answers its pages 503.
	Workspaces *workspace.Service
	// Upstreams is the tenant's upstream MCP servers; nil answers its
	// pages 503.
	Upstreams *upstreams.Service
}

// Dashboard is the operator dashboard under /t/{tenant}/dashboard.
type Dashboard struct {
	f      *Frame
	d      Deps
	local  *localCounts
	tailer *api.AuditTailer
}

// NewDashboard returns the dashboard drawn in f.
func NewDashboard(f *Frame, d Deps) *Dashboard {
	if d.PostLimit == 0 {
		d.PostLimit = 120
	}
	if d.Logger == nil {
		d.Logger = f.log
	}
	if d.Tail.Store == nil {
		d.Tail.Store = d.AuditLog
	}
	return &Dashboard{f: f, d: d, local: &localCounts{win: map[string]*postCount{}, now: time.Now}, tailer: &api.AuditTailer{Tail: d.Tail}}
}

// Handler serves one dashboard page or action. v arrives with the tenant,
// the signed-in member, its principal and the language filled in.
type Handler func(c echo.Context, v *View) error

// Register installs the dashboard's routes on e. tenant loads the tenant
// of /t/:tenant routes (auth.Resolver.LoadTenant).
func (d *Dashboard) Register(e *echo.Echo, tenant echo.MiddlewareFunc) {
	e.POST("/t/:tenant/language", d.setLanguage, tenant)
	g := e.Group("/t/:tenant/dashboard", tenant, d.signedIn)
	g.GET("", func(c echo.Context) error {
		t, _ := auth.TenantFrom(c.Request().Context())
		return c.Redirect(http.StatusSeeOther, "/t/"+t.Slug+"/dashboard/overview")
	})
	g.POST("/signout-everywhere", d.action("signOutEverywhere", identity.ReadTenant, d.signOutEverywhere))
	d.agentRoutes(g)
	d.keyRoutes(g)
	d.memberRoutes(g)
	d.overviewRoutes(g)
	d.auditRoutes(g)
	d.grantRoutes(g)
	d.liveRoutes(g)
	d.settingsRoutes(g)
	d.clientRoutes(g)
	d.responsibilityRoutes(g)
	d.boardRoutes(g)
	d.sandboxRoutes(g)
	d.computerRoutes(g)
	d.dbSourceRoutes(g)
	d.knowledgeRoutes(g)
	d.workspaceRoutes(g)
	d.upstreamRoutes(e, g, tenant)
}

// signedIn resolves the member's session. Without one the browser is sent
// to the sign-in page, which brings it back here.
func (d *Dashboard) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		ctx := r.Context()
		t, _ := auth.TenantFrom(ctx)
		v, ok := d.session(c, t)
		if !ok {
			if r.Method != http.MethodGet {
				return d.f.Render(c, http.StatusUnauthorized, "error", &View{Title: "dash.signed_out", Tenant: t,
					Data: d.f.cat.T(requestLang(r, ""), "dash.signed_out_text")})
			}
			return c.Redirect(http.StatusSeeOther, "/t/"+t.Slug+"/login?return_to="+url.QueryEscape(r.URL.RequestURI()))
		}
		c.Set("ui-view", v)
		c.SetRequest(r.WithContext(identity.WithPrincipal(ctx, v.Principal)))
		return next(c)
	}
}

// session returns the view of the signed-in member of t, if any.
func (d *Dashboard) session(c echo.Context, t identity.Tenant) (*View, bool) {
	if d.d.Sessions == nil {
		return nil, false
	}
	ck, err := c.Cookie(d.d.Sessions.SessionCookie())
	if err != nil || ck.Value == "" {
		return nil, false
	}
	ctx := c.Request().Context()
	st, p, err := d.d.Sessions.ResolveSession(ctx, ck.Value)
	if err != nil || st.ID != t.ID {
		return nil, false
	}
	m, err := d.d.Identity.Member(ctx, t.ID, p.MemberID)
	if err != nil {
		return nil, false
	}
	stored, zone := Lang(""), ""
	if d.f.prefs != nil {
		if l, err := d.f.prefs.MemberLanguage(ctx, t.ID, m.ID); err == nil {
			stored = Lang(l)
		}
		if tz, err := d.f.prefs.MemberTimeZone(ctx, t.ID, m.ID); err == nil {
			zone = tz
		}
	}
	return &View{Tenant: t, Member: &m, Principal: p, Lang: requestLang(c.Request(), stored), MemberZone: zone, cat: d.f.cat,
		loadNames:  func() *nameBook { return d.loadNames(ctx, t.ID) },
		loadBadges: func() map[string]int { return d.loadBadges(ctx, t.ID) }}, true
}

func viewOf(c echo.Context) *View {
	v, _ := c.Get("ui-view").(*View)
	cp := *v
	return &cp
}

// page wraps a page (GET) that needs action: a member without it gets 403,
// recorded in the audit trail (action openPage, object the page's route)
// as a refused change is.
func (d *Dashboard) page(need identity.Action, h Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		v := viewOf(c)
		if err := v.Principal.Check(need); err != nil {
			v.Object = "page:" + c.Path()
			_ = d.record(c.Request().Context(), v, "openPage", nil, http.StatusForbidden, fault.Message(err))
			return d.refusePage(c, v, err)
		}
		if n := c.QueryParam("done"); n != "" && d.f.cat.has("done."+n) {
			v.Notice = "done." + n
		}
		return d.fail(c, v, h(c, v))
	}
}

// has reports whether key is an English message.
func (c *Catalog) has(key string) bool { _, ok := c.msgs[English][key]; return ok }

// back redirects to sub (a dashboard path) after an action, naming the
// notice to show (a "done.*" message).
func back(c echo.Context, v *View, sub, notice string) error {
	p := v.Dash(sub)
	if notice != "" {
		p += "?done=" + notice
	}
	return c.Redirect(http.StatusSeeOther, p)
}

// setLanguage stores the language a browser chose: in a cookie, and for a
// signed-in member, with the member.
func (d *Dashboard) setLanguage(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	if !d.f.CheckCSRF(c) {
		return d.f.Render(c, http.StatusForbidden, "error", &View{Title: "dash.refused", Tenant: t,
			Data: d.f.cat.T(requestLang(c.Request(), ""), "form.expired")})
	}
	l := Lang(c.FormValue("lang"))
	if !l.Valid() {
		return d.f.Render(c, http.StatusBadRequest, "error", &View{Title: "dash.rejected", Tenant: t,
			Data: d.f.cat.T(requestLang(c.Request(), ""), "lang.unknown")})
	}
	if v, ok := d.session(c, t); ok && d.f.prefs != nil {
		if err := d.f.prefs.SetMemberLanguage(c.Request().Context(), t.ID, v.Member.ID, string(l)); err != nil {
			d.d.Logger.ErrorContext(c.Request().Context(), "store language", "tenant", t.ID, "err", err)
		}
	}
	c.SetCookie(&http.Cookie{Name: langCookie, Value: string(l), Path: "/", HttpOnly: true, Secure: d.f.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: 365 * 24 * 3600})
	ret := c.FormValue("return_to")
	if !strings.HasPrefix(ret, "/t/"+t.Slug+"/") || strings.HasPrefix(ret, "//") || strings.ContainsAny(ret, "\\\r\n") {
		ret = "/t/" + t.Slug + "/dashboard"
	}
	return c.Redirect(http.StatusSeeOther, ret)
}

// signOutEverywhere ends every session of the member, this one included.
func (d *Dashboard) signOutEverywhere(c echo.Context, v *View) error {
	v.Object = "member:" + v.Member.ID.String()
	if err := d.d.Identity.EndSessions(c.Request().Context(), v.Tenant.ID, v.Member.ID); err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: d.d.Sessions.SessionCookie(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: d.f.secure})
	return c.Redirect(http.StatusSeeOther, "/t/"+v.Tenant.Slug+"/login")
}
