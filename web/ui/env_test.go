package ui_test

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/oauth"
	"github.com/visorhq/visor/web/ui"
)

const password = "correct horse battery"

// env is a dashboard on a real Postgres with two tenants: acme, with a
// member of every role, and globex.
type env struct {
	t       testing.TB
	base    string
	echo    *echo.Echo
	ids     *identity.Service
	store   *postgres.IdentityStore
	audit   *audit.Memory
	members map[identity.Role]identity.Member
	a, b    identity.Tenant
	bob     identity.Member
	// replica builds another server over the same stores.
	replica func() *echo.Echo

	grants           *grants.Service
	streams          *streamList
	db               *postgres.DB
	responsibilities *responsibilities.Service
	board            *board.Service
	runs             *postgres.SandboxRunStore
	cu               *postgres.ComputerStore
	driver           *stopDriver
	dbs              *dbsources.Service

	mu     sync.Mutex
	events []changes.Event
}

func (e *env) Publish(_ context.Context, ev changes.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
	return nil
}

// published returns the change events committed so far.
func (e *env) published() []changes.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]changes.Event(nil), e.events...)
}

// testTools is a small registry: one tool every employee sees and one
// behind each of two agent opt-ins.
func testTools() *tools.Registry {
	reg := tools.NewRegistry()
	h := func(context.Context, tools.Call) (*tools.Result, error) { return &tools.Result{Text: "ok"}, nil }
	for _, t := range []tools.Tool{
		{Name: "plain_status", Description: "Always there.", Scope: identity.ScopeToolsRead, Family: "plain", Handler: h},
		{Name: "os_click", Description: "Behind os_native.", Scope: identity.ScopeToolsWrite, Family: "os", Gate: tools.GateOSNative, Handler: h},
		{Name: "recording_start", Description: "Behind recording.", Scope: identity.ScopeToolsWrite, Family: "recording", Gate: tools.GateRecording, Handler: h},
	} {
		reg.Register(t)
	}
	return reg
}

func newEnv(t testing.TB, tweak ...func(*ui.Deps)) *env {
	t.Helper()
	e := &env{t: t, members: map[identity.Role]identity.Member{}, audit: &audit.Memory{}}
	db := pgtest.New(t)
	e.db = db
	e.store = postgres.NewIdentityStore(db)
	log := slog.New(slog.DiscardHandler)
	e.ids = identity.NewService(e.store, e, log)
	creds := postgres.NewCredentialStore(db)
	ctx := context.Background()
	var err error
	e.a, err = e.ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	e.b, err = e.ids.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	for _, r := range identity.Roles {
		m, err := e.ids.CreateMember(ctx, e.a.ID, string(r)+"@acme.test", password, r)
		require.NoError(t, err)
		e.members[r] = m
	}
	e.bob, err = e.ids.CreateMember(ctx, e.b.ID, "bob@globex.test", password, identity.RoleOwner)
	require.NoError(t, err)

	e.grants = grants.NewService(postgres.NewGrantStore(db), e.store, e, tools.Match, log)
	e.streams = &streamList{}
	rs := postgres.NewResponsibilityStore(db)
	e.responsibilities = responsibilities.NewService(rs, agents.NewDelegation(e.store))
	e.responsibilities.SetQuestions(rs)
	e.runs = postgres.NewSandboxRunStore(db)
	e.cu, e.driver = postgres.NewComputerStore(db), &stopDriver{}
	cu := computer.NewService(e.cu, e.cu, e.driver, nil, log)
	e.dbs = newDBSources(t, db, e, log)
	e.board = board.NewService(board.Deps{Store: postgres.NewBoardStore(db), Relations: agents.NewDelegation(e.store),
		Directory: e.store, Staff: e.ids, Grants: e.grants, Logger: log})

	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	e.base = srv.URL
	e.replica = func() *echo.Echo {
		// A replica: its own frame, authorization server, resolver and
		// dashboard over the same database, at the same public URL.
		frame, err := ui.NewFrame(ui.FrameConfig{BaseURL: e.base, Secret: []byte(strings.Repeat("s", 32)), SessionCookie: provider.SessionCookieName, Preferences: e.store, Logger: log})
		require.NoError(t, err)
		as, err := oauth.New(ctx, oauth.Config{Config: provider.Config{BaseURL: e.base}, Pages: frame}, creds, e.ids, log)
		require.NoError(t, err)
		resolver := auth.NewResolver(e.store, e.store, auth.NewURLs(e.base), log)
		as.Provider().Attach(resolver)
		ec := echo.New()
		as.Register(ec, resolver.LoadTenant())
		deps := ui.Deps{Identity: e.ids, Sessions: resolver.Sessions, Audit: e.audit, Tools: testTools(),
			Subjects: tools.NewSubjects(e.store, tools.NoGrants{}, 0), Logger: log,
			AuditLog: trail{e.audit}, Grants: e.grants, Streams: e.streams, Clients: creds, OAuth: as.Provider(), Responsibilities: e.responsibilities, Board: e.board, SandboxRuns: e.runs,
			Computer: cu, ComputerSessions: e.cu, DBSources: e.dbs}
		for _, f := range tweak {
			f(&deps)
		}
		ui.NewDashboard(frame, deps).Register(ec, resolver.LoadTenant())
		return ec
	}
	e.echo = e.replica()
	h = e.echo
	return e
}

// onReplica makes the browser's requests go to handler h (another
// replica) instead of the first one, at the same URL and cookies.
func (b *browser) onReplica(h http.Handler) {
	b.c.Transport = replicaTransport{h}
}

type replicaTransport struct{ h http.Handler }

func (rt replicaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	rt.h.ServeHTTP(w, r)
	return w.Result(), nil
}

// browser is a member's user agent: a cookie jar and no automatic
// redirects, so each hop can be inspected.
type browser struct {
	t testing.TB
	e *env
	c *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	res, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(body)}
}

func (b *browser) get(path string, header ...string) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.e.base+path, nil)
	require.NoError(b.t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

// post sends a form from this server's own pages (its Origin).
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.e.base+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.base)
	return b.do(req)
}

// submit posts form with the CSRF token of the page at from.
func (b *browser) submit(from, path string, form url.Values) page {
	b.t.Helper()
	p := b.get(from)
	require.Equal(b.t, http.StatusOK, p.status, p.body)
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", field(b.t, csrfRE, p.body))
	if form.Get(ui.ConfirmField) == "" {
		form.Set(ui.ConfirmField, "1") // a destructive action's confirmation page, answered yes
	}
	return b.post(path, form)
}

var (
	csrfRE   = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	returnRE = regexp.MustCompile(`name="return_to" value="([^"]+)"`)
)

func field(t testing.TB, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	require.NotNil(t, m, "no %s in page:\n%s", re, body)
	return html.UnescapeString(m[1])
}

// signIn signs the browser in to acme as the member of role.
func (e *env) signIn(b *browser, role identity.Role) {
	e.signInAs(b, "acme", string(role)+"@acme.test")
}

func (e *env) signInAs(b *browser, tenant, email string) {
	e.t.Helper()
	p := b.get("/t/" + tenant + "/login")
	require.Equal(e.t, http.StatusOK, p.status, p.body)
	res := b.post("/t/"+tenant+"/login", url.Values{"csrf_token": {field(e.t, csrfRE, p.body)}, "return_to": {field(e.t, returnRE, p.body)},
		"email": {email}, "password": {password}})
	require.Equal(e.t, http.StatusSeeOther, res.status, res.body)
}

// agent creates an agent in acme directly through the service.
func (e *env) agent(name string) identity.Agent {
	e.t.Helper()
	a, err := e.ids.CreateAgent(context.Background(), e.a.ID, identity.NewAgent{Name: name})
	require.NoError(e.t, err)
	return a
}

// rows returns the dashboard's audit rows for action op.
func (e *env) rows(op string) []audit.Entry {
	var out []audit.Entry
	for _, r := range e.audit.Entries() {
		if r.Source == audit.SourceDashboard && r.Action == op {
			out = append(out, r)
		}
	}
	return out
}
