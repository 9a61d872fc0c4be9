package api_test

import (
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/api"
)

var update = flag.Bool("update", false, "rewrite golden files")

// extra stands for another area's contributed resource.
type extra struct{}

func (extra) Operations() []api.Operation {
	return []api.Operation{{Method: http.MethodGet, Path: "/tenants/:tenant/widgets", ID: "listWidgets", Tag: "widgets",
		Needs: identity.ReadTenant, Summary: "List widgets", Response: api.KeyList{}, Handler: func(c echo.Context) error { return c.NoContent(204) }}}
}

func TestOpenAPIDocumentMatchesGolden(t *testing.T) {
	t.Parallel()
	doc := api.New(api.Deps{Logger: slog.New(slog.DiscardHandler)}).Document()
	golden := filepath.Join("testdata", "openapi.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, doc, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), string(doc), "the OpenAPI document changed; if intended, run go test ./web/api -update and review the diff")
}

// TestOpenAPIListsExactlyTheRegisteredRoutes compares the document served
// at /api/v1/openapi.json with the routes echo actually has under
// /api/v1, including a contributed resource and a route someone registered
// behind the API's back.
func TestOpenAPIListsExactlyTheRegisteredRoutes(t *testing.T) {
	t.Parallel()
	e := echo.New()
	a := api.New(api.Deps{Logger: slog.New(slog.DiscardHandler)})
	a.Add(extra{})
	a.Register(e)

	require.Empty(t, api.Undocumented(e, served(t, e)))

	e.GET("/api/v1/sneaky", func(c echo.Context) error { return nil })
	require.Equal(t, []string{"GET /api/v1/sneaky: registered but not in the OpenAPI document"}, api.Undocumented(e, served(t, e)))
}

func served(t *testing.T, e *echo.Echo) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, api.DocPath, nil))
	require.Equal(t, 200, rec.Code)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	return rec.Body.Bytes()
}

// TestRegisterRefusesAnOperationWithoutAuthority: a route that declares no
// admin API action never gets served.
func TestRegisterRefusesAnOperationWithoutAuthority(t *testing.T) {
	t.Parallel()
	for _, needs := range []identity.Action{"", "anything", identity.CallAdminTools} {
		a := api.New(api.Deps{Logger: slog.New(slog.DiscardHandler)})
		a.Add(undeclared{needs})
		require.PanicsWithValue(t, `api: operation listUndeclared declares no admin API action in Needs ("`+string(needs)+`"); pick one of identity.Actions`,
			func() { a.Register(echo.New()) })
	}
}

type undeclared struct{ needs identity.Action }

func (u undeclared) Operations() []api.Operation {
	return []api.Operation{{Method: http.MethodGet, Path: "/tenants/:tenant/undeclared", ID: "listUndeclared", Tag: "x", Needs: u.needs,
		Summary: "x", Handler: func(c echo.Context) error { return nil }}}
}

func TestUndocumentedReportsDocumentedButMissingRoutes(t *testing.T) {
	t.Parallel()
	e := echo.New()
	doc := []byte(`{"paths":{"/api/v1/ghost/{id}":{"delete":{}}}}`)
	require.Equal(t, []string{"DELETE /api/v1/ghost/{id}: in the OpenAPI document but not registered"}, api.Undocumented(e, doc))
}
