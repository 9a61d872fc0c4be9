package oauth_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
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
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/oauth"
	"github.com/visorhq/visor/web/ui"
)

const password = "correct horse battery"

// env is the setup bundle of the OAuth tests: a real Postgres, two tenants
// with an owner each, the authorization server and a probe standing in for
// the MCP endpoint, served over real HTTP, and a TLS server hosting client
// metadata documents.
type env struct {
	t        testing.TB
	ids      *postgres.IdentityStore
	handler  http.Handler
	db       *postgres.DB
	svc      *identity.Service
	creds    *postgres.CredentialStore
	resolver *auth.Resolver
	server   *oauth.Server
	srv      *httptest.Server
	base     string
	docs     *httptest.Server
	docMu    sync.Mutex
	doc      map[string]string // path -> JSON body served by docs
	a, b     identity.Tenant
	alice    identity.Member // owner of a
	bob      identity.Member // owner of b
}

func newEnv(t testing.TB, tweak ...func(*oauth.Config)) *env {
	t.Helper()
	return newEnvLog(t, slog.New(slog.NewTextHandler(io.Discard, nil)), tweak...)
}

// newEnvLog is newEnv with the server logging to log.
func newEnvLog(t testing.TB, log *slog.Logger, tweak ...func(*oauth.Config)) *env {
	t.Helper()
	e := &env{t: t, doc: map[string]string{}}
	e.db = pgtest.New(t)
	ids := postgres.NewIdentityStore(e.db)
	e.ids = ids
	// The resolver (built below, once the base URL is known) hears the
	// service's change events, as on the replica that makes a change.
	e.svc = identity.NewService(ids, publishFunc(func(ctx context.Context, ev changes.Event) error {
		if e.resolver == nil {
			return nil
		}
		return e.resolver.Publish(ctx, ev)
	}), log)
	e.creds = postgres.NewCredentialStore(e.db)
	ctx := context.Background()
	var err error
	tt := pgtest.TwoTenants(t, e.db)
	e.a, e.b = tt.A, tt.B
	e.alice, err = e.svc.CreateMember(ctx, e.a.ID, "alice@acme.test", password, identity.RoleOwner)
	require.NoError(t, err)
	e.bob, err = e.svc.CreateMember(ctx, e.b.ID, "bob@globex.test", password, identity.RoleOwner)
	require.NoError(t, err)

	e.docs = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.docMu.Lock()
		body, ok := e.doc[r.URL.Path]
		e.docMu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(body, "redirect:") {
			http.Redirect(w, r, strings.TrimPrefix(body, "redirect:"), http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(e.docs.Close)
	roots := x509.NewCertPool()
	roots.AddCert(e.docs.Certificate())

	var h http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(e.srv.Close)
	e.base = e.srv.URL

	frame, err := ui.NewFrame(ui.FrameConfig{BaseURL: e.base, Secret: []byte(strings.Repeat("k", 32)), SessionCookie: provider.SessionCookieName, Logger: log})
	require.NoError(t, err)
	cfg := oauth.Config{Config: provider.Config{BaseURL: e.base, Fetcher: provider.FetcherConfig{AllowPrivateHosts: []string{"127.0.0.1"}, RootCAs: roots}}, Pages: frame}
	for _, f := range tweak {
		f(&cfg)
	}
	e.server, err = oauth.New(ctx, cfg, e.creds, e.svc, log)
	require.NoError(t, err)
	e.resolver = auth.NewResolver(ids, ids, auth.NewURLs(e.base), log)
	e.server.Provider().Attach(e.resolver)
	e.resolver.Rounds = auth.NewRounds(e.creds, ids)

	ec := echo.New()
	// The test client is a trusted proxy (loopback): tests set
	// X-Forwarded-For to speak from other addresses.
	ec.IPExtractor = echo.ExtractIPFromXFFHeader()
	e.server.Register(ec, e.resolver.LoadTenant())
	probe := func(c echo.Context) error {
		p, _ := identity.PrincipalFrom(c.Request().Context())
		return c.JSON(http.StatusOK, p)
	}
	ec.Any("/t/:tenant/mcp", probe, e.resolver.Middleware(""))
	ec.POST("/t/:tenant/mcp/write", func(c echo.Context) error {
		p, _ := identity.PrincipalFrom(c.Request().Context())
		if !p.HasScope(identity.ScopeToolsWrite) {
			e.resolver.WriteInsufficientScope(c.Response(), c.Request(), identity.ScopeToolsWrite)
			return nil
		}
		return c.JSON(http.StatusOK, p)
	}, e.resolver.Middleware(""))
	ec.GET("/api/v1/whoami", probe, e.resolver.AdminMiddleware())
	ec.POST("/api/v1/whoami", probe, e.resolver.AdminMiddleware())
	ec.GET("/api/v1/t/:tenant/whoami", probe, e.resolver.AdminMiddleware())
	h = ec
	e.handler = ec
	return e
}

// publishFunc is a changes.Publisher made of a function.
type publishFunc func(context.Context, changes.Event) error

func (f publishFunc) Publish(ctx context.Context, e changes.Event) error { return f(ctx, e) }

// serveDoc publishes a client metadata document at path on the docs server
// and returns its URL. body may use %s for the URL itself.
func (e *env) serveDoc(path, body string) string {
	u := e.docs.URL + path
	e.docMu.Lock()
	defer e.docMu.Unlock()
	if strings.Contains(body, "%s") {
		body = fmt.Sprintf(body, u)
	}
	e.doc[path] = body
	return u
}

func (e *env) cimdClient(path string, redirect string) string {
	return e.serveDoc(path, `{"client_id":"%s","client_name":"Doc Client","redirect_uris":["`+redirect+`"],
		"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`)
}

// browser is a member's user agent: a cookie jar and no automatic
// redirects, so each hop can be inspected.
type browser struct {
	t testing.TB
	c *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
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

func (b *browser) get(u string) page {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(b.t, err)
	return b.do(req)
}

func (b *browser) post(u string, form url.Values, origin string) page {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return b.do(req)
}

var (
	csrfRE     = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	returnRE   = regexp.MustCompile(`name="return_to" value="([^"]+)"`)
	actionRE   = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
	consentH1  = "Allow "
	loginTitle = "Sign in to "
)

func field(t testing.TB, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	require.NotNil(t, m, "no %s in page:\n%s", re, body)
	return html.UnescapeString(m[1])
}

// pkce returns a verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	verifier = strings.Repeat("v", 43) + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprint(rand64())))
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

var seq struct {
	sync.Mutex
	n int
}

func rand64() int {
	seq.Lock()
	defer seq.Unlock()
	seq.n++
	return seq.n
}

// authz describes one authorization request.
type authz struct {
	tenant, clientID, redirect, scope, state, challenge, method, resource string
}

func (e *env) authorizeURL(a authz) string {
	q := url.Values{"response_type": {"code"}, "client_id": {a.clientID}, "redirect_uri": {a.redirect}, "state": {a.state}}
	if a.scope != "" {
		q.Set("scope", a.scope)
	}
	if a.challenge != "" {
		q.Set("code_challenge", a.challenge)
		q.Set("code_challenge_method", a.method)
	}
	if a.resource != "" {
		q.Set("resource", a.resource)
	}
	return e.base + "/t/" + a.tenant + "/oauth/authorize?" + q.Encode()
}

// login signs the browser in from a login page.
func (e *env) login(b *browser, tenant string, p page, email string) page {
	e.t.Helper()
	require.Equal(e.t, http.StatusOK, p.status, "%s %s", p.header.Get("Location"), p.body)
	require.Contains(e.t, p.body, loginTitle)
	form := url.Values{"csrf_token": {field(e.t, csrfRE, p.body)}, "return_to": {field(e.t, returnRE, p.body)},
		"email": {email}, "password": {password}}
	res := b.post(e.base+"/t/"+tenant+"/login", form, e.base)
	require.Equal(e.t, http.StatusSeeOther, res.status, res.body)
	return b.get(e.base + res.header.Get("Location"))
}

// decide answers a consent page.
func (e *env) decide(b *browser, p page, decision string) page {
	e.t.Helper()
	require.Equal(e.t, http.StatusOK, p.status, p.body)
	require.Contains(e.t, p.body, consentH1)
	form := url.Values{"csrf_token": {field(e.t, csrfRE, p.body)}, "decision": {decision}}
	return b.post(e.base+field(e.t, actionRE, p.body), form, e.base)
}

// callback parses the redirect back to the client.
func callback(t testing.TB, p page, redirect string) url.Values {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	loc := p.header.Get("Location")
	require.True(t, strings.HasPrefix(loc, redirect+"?"), "redirected to %q, want %q", loc, redirect)
	u, err := url.Parse(loc)
	require.NoError(t, err)
	return u.Query()
}

// tokenResponse is the token endpoint's answer.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

func (e *env) postForm(path string, form url.Values, basicUser, basicPass string) (int, tokenResponse) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(form.Encode()))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicUser != "" {
		req.SetBasicAuth(url.QueryEscape(basicUser), url.QueryEscape(basicPass))
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	var tr tokenResponse
	body, _ := io.ReadAll(res.Body)
	if len(body) > 0 {
		require.NoError(e.t, json.Unmarshal(body, &tr), string(body))
	}
	return res.StatusCode, tr
}

func (e *env) exchange(tenant, clientID, code, redirect, verifier, resource string) (int, tokenResponse) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}}
	if resource != "" {
		form.Set("resource", resource)
	}
	return e.postForm("/t/"+tenant+"/oauth/token", form, "", "")
}

func (e *env) refresh(tenant, clientID, rt string) (int, tokenResponse) {
	return e.postForm("/t/"+tenant+"/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt},
		"client_id": {clientID}}, "", "")
}

// call makes a request to the tenant's MCP endpoint (the probe).
func (e *env) call(tenant, token string) (int, identity.Principal, http.Header) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+"/t/"+tenant+"/mcp", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	var p identity.Principal
	if res.StatusCode == http.StatusOK {
		require.NoError(e.t, json.NewDecoder(res.Body).Decode(&p))
	}
	return res.StatusCode, p, res.Header
}

// grant runs the whole browser flow for a public client and returns the
// tokens.
func (e *env) grant(b *browser, tenant, clientID, redirect, scope string, email string) tokenResponse {
	e.t.Helper()
	verifier, challenge := pkce()
	resource := e.base + "/t/" + tenant + "/mcp"
	p := b.get(e.authorizeURL(authz{tenant: tenant, clientID: clientID, redirect: redirect, scope: scope, state: "st-1",
		challenge: challenge, method: "S256", resource: resource}))
	if strings.Contains(p.body, loginTitle) {
		p = e.login(b, tenant, p, email)
	}
	if p.status == http.StatusOK {
		p = e.decide(b, p, "allow")
	}
	q := callback(e.t, p, redirect)
	require.Equal(e.t, "st-1", q.Get("state"))
	require.Equal(e.t, e.base+"/t/"+tenant, q.Get("iss"))
	status, tr := e.exchange(tenant, clientID, q.Get("code"), redirect, verifier, resource)
	require.Equal(e.t, http.StatusOK, status, "%+v", tr)
	return tr
}

// safeWriter serializes writes to w.
type safeWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *safeWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.w)
}

func mustURL(t testing.TB, raw string) *url.URL {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// dumpTables returns every row of the tables as JSON text.
func dumpTables(t testing.TB, e *env, tables ...string) string {
	var b strings.Builder
	for _, tb := range tables {
		rows, err := e.db.Pool.Query(context.Background(), `SELECT row_to_json(x)::text FROM `+tb+` x`)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			b.WriteString(s + "\n")
		}
		rows.Close()
	}
	return b.String()
}
