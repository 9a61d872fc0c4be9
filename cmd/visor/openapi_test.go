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
	"slices"
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
	requireCompleteContract(t, doc, "http://visor.test")
	var tags struct {
		Tags []struct{ Name, Description string } `json:"tags"`
	}
	require.NoError(t, json.Unmarshal(doc, &tags))
	for _, tag := range tags.Tags {
		require.NotEmpty(t, tag.Description, "tag %q needs a description in web/api/openapi.go tagDescriptions", tag.Name)
	}

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

// requireCompleteContract checks what a client generator needs from the
// document: the server; for every operation the credentials it accepts
// and each error it can answer; paging declared the same way by every
// list; every query and path parameter described; enums for closed sets;
// and agents named by id or name in requests, never by an agent_id.
func requireCompleteContract(t *testing.T, raw []byte, base string) {
	t.Helper()
	type param struct {
		Name, In, Description string
		Schema                map[string]any
	}
	type media struct {
		Schema map[string]any `json:"schema"`
	}
	type operation struct {
		OperationID string                     `json:"operationId"`
		Security    []map[string][]string      `json:"security"`
		Responses   map[string]json.RawMessage `json:"responses"`
		Parameters  []param                    `json:"parameters"`
		RequestBody *struct {
			Content map[string]media `json:"content"`
		} `json:"requestBody"`
		Authority struct{ Action string } `json:"x-visor-authority"`
	}
	var doc struct {
		Servers    []struct{ URL string }          `json:"servers"`
		Paths      map[string]map[string]operation `json:"paths"`
		Components struct {
			Schemas   map[string]map[string]any  `json:"schemas"`
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, base, doc.Servers[0].URL, "servers names the deployment's public URL")

	schemaOf := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
		}
		return s
	}
	lists := 0
	for p, ops := range doc.Paths {
		for m, op := range ops {
			where := strings.ToUpper(m) + " " + p
			if op.OperationID == "getOpenAPI" {
				require.Empty(t, op.Security)
				continue
			}
			// Credentials, truthfully: the platform token alone for
			// platform-only actions, otherwise keys, sessions and the token.
			var schemes []string
			for _, s := range op.Security {
				for k := range s {
					schemes = append(schemes, k)
				}
			}
			if op.Authority.Action == "manage_tenants" {
				require.Equal(t, []string{"platformToken"}, schemes, where)
			} else {
				require.ElementsMatch(t, []string{"operatorKey", "memberSession", "platformToken"}, schemes, where)
			}
			// Errors: every operation can be 401 and 403; one that names
			// things in its path 404; one with a body 400 and 413; one with
			// query parameters 400. Each is a shared response that exists.
			want := []string{"401", "403", "5XX"}
			if strings.Contains(p, "{") {
				want = append(want, "404")
			}
			if op.RequestBody != nil {
				want = append(want, "400", "413")
			}
			if len(op.Parameters) > 0 && slices.ContainsFunc(op.Parameters, func(q param) bool { return q.In == "query" }) {
				want = append(want, "400")
			}
			for _, code := range want {
				require.Contains(t, op.Responses, code, "%s must declare %s", where, code)
			}
			for code, r := range op.Responses {
				var ref struct {
					Ref string `json:"$ref"`
				}
				require.NoError(t, json.Unmarshal(r, &ref))
				if code[0] == '4' || code[0] == '5' {
					name := strings.TrimPrefix(ref.Ref, "#/components/responses/")
					require.Contains(t, doc.Components.Responses, name, "%s %s", where, code)
				}
			}
			for _, q := range op.Parameters {
				require.NotEmpty(t, q.Description, "%s: parameter %s needs a description", where, q.Name)
				require.NotEqual(t, "agent_id", q.Name, "%s: name agents by id or name with agent", where)
				if q.Name == "limit" {
					require.Equal(t, map[string]any{"type": "integer", "minimum": 1.0, "maximum": 500.0, "default": 100.0}, q.Schema, where)
				}
			}
			if op.RequestBody != nil {
				body := schemaOf(op.RequestBody.Content["application/json"].Schema)
				props, _ := body["properties"].(map[string]any)
				require.NotContains(t, props, "agent_id", "%s: a request names an agent by id or name (agent), as paths do", where)
				for _, f := range []string{"agent", "reports_to"} {
					if fs, ok := props[f].(map[string]any); ok {
						require.Contains(t, fs["description"], "id or", "%s: %s takes an agent's id or name", where, f)
					}
				}
			}
			// Paging: a GET of a collection (its path does not end in a
			// parameter) answering an object with an array of objects is a
			// list; it takes limit and cursor and answers next_cursor,
			// nothing else.
			if m != "get" || strings.HasSuffix(p, "}") {
				continue
			}
			var okBody struct {
				Content map[string]media `json:"content"`
			}
			require.NoError(t, json.Unmarshal(op.Responses["200"], &okBody))
			js, ok := okBody.Content["application/json"]
			if !ok {
				continue
			}
			props, _ := schemaOf(js.Schema)["properties"].(map[string]any)
			isList := false
			for _, v := range props {
				items, _ := v.(map[string]any)["items"].(map[string]any)
				if v.(map[string]any)["type"] == "array" && items["$ref"] != nil {
					isList = true // an array of objects, not of strings
				}
			}
			if !isList {
				continue
			}
			lists++
			var names []string
			for _, q := range op.Parameters {
				if q.In == "query" {
					names = append(names, q.Name)
				}
			}
			require.Subset(t, names, []string{"limit", "cursor"}, "%s lists, so it pages with limit and cursor", where)
			for _, other := range []string{"before", "after", "offset", "page", "page_size", "per_page"} {
				require.NotContains(t, names, other, "%s: page with limit and cursor only", where)
			}
			require.Contains(t, props, "next_cursor", "%s answers next_cursor", where)
		}
	}
	require.GreaterOrEqual(t, lists, 10, "the lists were found")

	// Closed sets are enums.
	for schema, field := range map[string]string{"Member": "role", "Agent": "status", "Key": "kind", "grants.Request": "status"} {
		props := doc.Components.Schemas[schema]["properties"].(map[string]any)
		require.NotEmpty(t, props[field].(map[string]any)["enum"], "%s.%s is an enum", schema, field)
	}
}
