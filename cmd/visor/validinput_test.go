package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/mcp"
	"github.com/visorhq/visor/web/server"
)

// TestEveryRouteRefusesTextPostgresCannotStore walks every route of the
// server `visor serve` builds (admin API, OAuth, pages, MCP, probes) and
// sends each a NUL or invalid UTF-8 in a query parameter, a header, a path
// parameter and a JSON or form body, with a credential every admin route
// accepts: each is a 400 naming the problem, never a 500.
func TestEveryRouteRefusesTextPostgresCannotStore(t *testing.T) {
	t.Parallel()
	needRedis(t)
	const platform = "platform-token-0123456789abcdef0123456789"
	cfg, err := LoadConfig(testEnvGetenv(testEnv(t, pgtest.NewURL(t), "VISOR_ADMIN_TOKEN", platform)))
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	a, err := openApp(context.Background(), cfg, log, nil, appNeeds{redis: true, schemaCheck: true})
	require.NoError(t, err)
	defer a.Close()
	s := server.New(server.Options{Logger: log, ErrorHandler: a.errorHandler()})
	require.NoError(t, a.edges(context.Background(), s, "http://visor.test"))
	e := s.Echo()
	send := func(method, target, body string, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+platform)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	rec := send(http.MethodPost, "/api/v1/tenants", `{"slug":"acme","name":"Acme"}`, map[string]string{"Content-Type": "application/json"})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())

	// The trail's filter that answered 500 before.
	rec = send(http.MethodGet, "/api/v1/tenants/acme/audit?tool=%00", "", nil)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `query parameter \"tool\" contains a NUL character`)

	// A client id is unescaped once more by its handler: %2500 is a NUL only then.
	for _, target := range []string{"/api/v1/tenants/acme/oauth/clients/%2500", "/api/v1/tenants/acme/oauth/consents/%2500?member_id=" + uuid.NewString()} {
		rec = send(http.MethodDelete, target, "", nil)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", target, rec.Body.String())
		require.Contains(t, rec.Body.String(), "contains a NUL character", target)
	}

	routes := 0
	for _, r := range e.Routes() {
		if r.Method == http.MethodOptions || strings.HasPrefix(r.Method, "echo_route") {
			continue
		}
		routes++
		path, bad := fill(r.Path)
		cases := map[string]*httptest.ResponseRecorder{
			"query NUL":        send(r.Method, path+"?q=%00", "", nil),
			"query name UTF-8": send(r.Method, path+"?%FF=1", "", nil),
			"header NUL":       send(r.Method, path, "", map[string]string{"X-Note": "a\x00b"}),
			"header UTF-8":     send(r.Method, path, "", map[string]string{"User-Agent": "agent \xff"}),
		}
		if r.Path != mcp.Route { // the MCP endpoint answers in JSON-RPC (web/mcp TestCallWithTextPostgresRefusesIsInvalidParams)
			cases["JSON body UTF-8"] = send(r.Method, path, "{\"name\":\"\xff\"}", map[string]string{"Content-Type": "application/json"})
			cases["JSON body NUL"] = send(r.Method, path, `{"name":"a\u0000"}`, map[string]string{"Content-Type": "application/json"})
			form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
			cases["form field NUL"] = send(r.Method, path, "email=a%00b", form)
			cases["form value UTF-8"] = send(r.Method, path, "email=%C3", form)
			cases["untyped body NUL"] = send(r.Method, path, `{"name":"a\u0000"}`, nil)
		}
		if bad != "" {
			cases["path NUL"] = send(r.Method, bad, "", nil)
		}
		for what, rec := range cases {
			require.Equal(t, http.StatusBadRequest, rec.Code, "%s %s, %s: %s", r.Method, r.Path, what, rec.Body.String())
			require.Contains(t, rec.Body.String(), "without NUL characters", "%s %s, %s", r.Method, r.Path, what)
		}
	}
	require.Greater(t, routes, 40, "the walk reached the wired routes")
}

// fill gives a route's parameters values: the tenant acme, a fresh id for
// the rest. bad is the same path with its last parameter a NUL ("" when it
// has none besides the tenant).
func fill(route string) (path, bad string) {
	parts := strings.Split(route, "/")
	last := -1
	for i, p := range parts {
		switch {
		case p == ":tenant":
			parts[i] = "acme"
		case strings.HasPrefix(p, ":") || p == "*":
			parts[i], last = uuid.NewString(), i
		}
	}
	path = strings.Join(parts, "/")
	if last >= 0 {
		parts[last] = "a%00b"
		bad = strings.Join(parts, "/")
	}
	return path, bad
}
