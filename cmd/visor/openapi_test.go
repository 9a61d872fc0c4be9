package main

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/api"
	"github.com/visorhq/visor/web/server"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestOpenAPICoversTheWiredServer builds the HTTP server exactly as
// `visor serve` does, with every area's routes, and checks that the
// document served at /api/v1/openapi.json lists exactly the routes
// registered under /api/v1, and matches the reviewed golden file.
func TestOpenAPICoversTheWiredServer(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := pgtest.NewURL(t)
	cfg, err := LoadConfig(testEnvGetenv(testEnv(t, url)))
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	a, err := openApp(context.Background(), cfg, log, nil, appNeeds{redis: true, schemaCheck: true})
	require.NoError(t, err)
	defer a.Close()
	s := server.New(server.Options{Logger: log, ErrorHandler: a.errorHandler()})
	require.NoError(t, a.routes(s, "http://visor.test"))

	rec := httptest.NewRecorder()
	s.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, api.DocPath, nil))
	require.Equal(t, 200, rec.Code)
	doc := rec.Body.Bytes()
	require.Empty(t, api.Undocumented(s.Echo(), doc), "every /api/v1 route must be an api.Operation (add it with adm.Add)")

	golden := filepath.Join("testdata", "openapi.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, doc, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), string(doc), "the admin API changed; if intended, run `go test ./cmd/visor -run OpenAPI -update` and review testdata/openapi.json")
}

func testEnvGetenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}
