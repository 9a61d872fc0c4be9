package main

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
	require.NoError(t, a.edges(context.Background(), s, "http://visor.test"))

	rec := httptest.NewRecorder()
	s.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, api.DocPath, nil))
	require.Equal(t, 200, rec.Code)
	doc := rec.Body.Bytes()
	require.Empty(t, api.Undocumented(s.Echo(), doc), "every /api/v1 route must be an api.Operation (add it with adm.Add)")

	requireValidDocument(t, doc)

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

// requireValidDocument checks what an OpenAPI 3.1 validator would reject
// first: duplicate operationIds, dangling $refs, operations without
// responses, path parameters that are not declared.
func requireValidDocument(t *testing.T, raw []byte) {
	t.Helper()
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	ids := map[string]string{}
	for p, ops := range doc.Paths {
		for m, rawOp := range ops {
			var op struct {
				OperationID string                     `json:"operationId"`
				Responses   map[string]json.RawMessage `json:"responses"`
				Parameters  []struct{ Name, In string }
			}
			require.NoError(t, json.Unmarshal(rawOp, &op))
			where := strings.ToUpper(m) + " " + p
			require.NotEmpty(t, op.OperationID, where)
			require.NotContains(t, ids, op.OperationID, "operationId %s is used by %s and %s", op.OperationID, ids[op.OperationID], where)
			ids[op.OperationID] = where
			require.NotEmpty(t, op.Responses, where)
			for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(p, -1) {
				found := false
				for _, prm := range op.Parameters {
					found = found || (prm.In == "path" && prm.Name == m[1])
				}
				require.True(t, found, "%s does not declare path parameter %s", where, m[1])
			}
		}
	}
	for _, ref := range regexp.MustCompile(`"\$ref":\s*"#/components/schemas/([^"]+)"`).FindAllStringSubmatch(string(raw), -1) {
		require.Contains(t, doc.Components.Schemas, ref[1], "dangling $ref")
	}
}
