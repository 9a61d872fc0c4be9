package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
)

// Schemaer lets a wire type describe itself in the OpenAPI document when
// reflection cannot (custom JSON encodings).
type Schemaer interface {
	JSONSchema() map[string]any
}

var pathParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// OpenAPIPath turns an echo path (/tenants/:tenant) into an OpenAPI one
// (/tenants/{tenant}).
func OpenAPIPath(echoPath string) string { return pathParam.ReplaceAllString(echoPath, "{$1}") }

// Document returns the OpenAPI 3.1 document of every operation, as
// indented JSON with sorted keys (stable, so it can be a golden file).
func (a *API) Document() []byte {
	g := &schemaGen{schemas: map[string]any{}}
	g.ref(reflect.TypeFor[ErrorBody]())
	paths := map[string]map[string]any{}
	paths[DocPath] = map[string]any{"get": map[string]any{
		"operationId": "getOpenAPI", "summary": "This document", "tags": []string{"meta"}, "security": []any{},
		"description": "The OpenAPI 3.1 document of this API. Needs no credential.",
		"responses": map[string]any{"200": map[string]any{"description": "The OpenAPI 3.1 document",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}},
	}}
	tags := map[string]bool{"meta": true}
	used := map[int]bool{}
	for _, op := range a.Operations() {
		for _, st := range ErrorsOf(op) {
			used[st] = true
		}
		p := OpenAPIPath(path.Join(Prefix, op.Path))
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(op.Method)] = g.operation(op)
		tags[op.Tag] = true
	}
	var tagList []any
	for _, t := range slices.Sorted(maps.Keys(tags)) {
		tagList = append(tagList, map[string]any{"name": t, "description": tagDescriptions[t]})
	}
	server := a.baseURL
	if server == "" {
		server = "http://localhost:8080"
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Visor admin API",
			"version": "v1",
			"license": map[string]any{"name": "Apache-2.0", "identifier": "Apache-2.0"},
			"description": "Manage tenants, members, agents, agent settings, API keys, OAuth clients, grants and the audit log. " +
				"Each operation says which credentials it accepts: an operator API key (Authorization: Bearer vsk_...) " +
				"holding the scope the operation's action needs, a member's dashboard session cookie whose role allows " +
				"the action, or the platform admin token (VISOR_ADMIN_TOKEN). OAuth access tokens, AI employees' keys " +
				"and round tokens are refused (403). x-visor-authority names the action, the scope and the roles. " +
				"Agents are named by id or name wherever an agent is named, in paths and bodies alike. Every list " +
				"pages the same way: limit (1-500, default 100) and cursor in the query, next_cursor in the answer " +
				"(absent on the last page). Errors are {\"error\":{\"code\",\"message\"}}.",
		},
		"servers": []any{map[string]any{"url": server, "description": "This deployment (VISOR_BASE_URL)"}},
		"tags":    tagList,
		"paths":   paths,
		"components": map[string]any{
			"schemas":         g.schemas,
			"responses":       errorResponses(used),
			"securitySchemes": securitySchemes,
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // only maps, slices and strings: cannot fail
	}
	return append(b, '\n')
}

// tagDescriptions describe the groups of operations.
var tagDescriptions = map[string]string{
	"meta":             "The API's own description.",
	"tenants":          "Tenants: creating and listing them needs the platform admin token.",
	"members":          "People who sign in to the dashboard, with a role each.",
	"agents":           "AI employees, their settings, and names reserved by removed ones.",
	"db-sources":       "A tenant's databases that AI employees read with the db_* tools; passwords are write-only.",
	"mcp-servers":      "A tenant's upstream MCP servers, reached through the mcp_tool_* entry points; secrets are write-only.",
	"keys":             "API keys of operators and AI employees, and round tokens.",
	"oauth":            "OAuth clients registered with the tenant, and members' consents.",
	"grants":           "Capability requests of AI employees and the scoped grants that answer them.",
	"audit":            "The append-only record of tool calls, refusals and operator actions.",
	"board":            "The task board: tasks, goals, routines and reminders.",
	"settings":         "Tenant settings.",
	"responsibilities": "The standing work of AI employees: their schedules, windows and caps, runs, skipped wake-ups, and the questions they ask operators.",
	"knowledge":        "What AI employees remember: memories with their sources, wikis, belief calibration, and forgetting a source.",
	"runtime":          "Where AI employees' wake-ups are pushed (signed webhooks), and the wake-ups themselves with their dead letters.",
	"workspaces":       "AI employees' workspaces for the file and command tools: usage, stopping their commands, resetting them.",
}

// securitySchemes are the credentials the admin API knows.
var securitySchemes = map[string]any{
	"operatorKey": map[string]any{"type": "http", "scheme": "bearer",
		"description": "An operator API key (vsk_...). Reads need the admin:read scope, changes admin:write; a key a member made is also bounded by that member's current role."},
	"memberSession": map[string]any{"type": "apiKey", "in": "cookie", "name": "visor_session",
		"description": "A member's dashboard session (sign in at /t/{tenant}/login); the member's role must allow the action. Changes also need a same-origin request."},
	"platformToken": map[string]any{"type": "http", "scheme": "bearer",
		"description": "The platform admin token (VISOR_ADMIN_TOKEN): creates and lists tenants, and may act in any tenant."},
}

// errorStatuses are the error answers an operation may declare, each a
// shared response in components/responses.
var errorStatuses = map[int]struct{ name, why string }{
	http.StatusBadRequest:            {"BadRequest", "The request is malformed: a bad body, query parameter or cursor (code invalid_argument)."},
	http.StatusUnauthorized:          {"Unauthorized", "No credential, or one that is unknown, expired or revoked (code unauthenticated). WWW-Authenticate says which."},
	http.StatusForbidden:             {"Forbidden", "The credential may not do this: a missing scope, a role that does not allow it, or a kind of credential the admin API refuses (code permission_denied)."},
	http.StatusNotFound:              {"NotFound", "The tenant or the object named in the path does not exist, or not in this tenant (code not_found)."},
	http.StatusConflict:              {"Conflict", "The change conflicts with the current state: a name already taken, a stale version, an object in the wrong state (code conflict)."},
	http.StatusRequestEntityTooLarge: {"TooLarge", "The request body is larger than VISOR_HTTP_BODY_LIMIT (code too_large)."},
	http.StatusTooManyRequests:       {"RateLimited", "Too many requests; retry after the Retry-After header's seconds (code rate_limited)."},
}

func errorResponses(used map[int]bool) map[string]any {
	out := map[string]any{
		"ServerError": map[string]any{"description": "Visor failed, or Postgres or Redis is unavailable (codes internal, unavailable); the message never holds internal detail. Retry later.",
			"content": jsonContent(map[string]any{"$ref": "#/components/schemas/ErrorBody"})},
	}
	for st, e := range errorStatuses {
		if !used[st] {
			continue
		}
		r := map[string]any{"description": e.why, "content": jsonContent(map[string]any{"$ref": "#/components/schemas/ErrorBody"})}
		switch e.name {
		case "Unauthorized":
			r["headers"] = map[string]any{"WWW-Authenticate": map[string]any{"description": "The Bearer challenge.", "schema": map[string]any{"type": "string"}}}
		case "RateLimited":
			r["headers"] = map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait.", "schema": map[string]any{"type": "integer"}}}
		}
		out[e.name] = r
	}
	return out
}

// pathParams describe the path parameters operations use, by name.
var pathParams = map[string]map[string]any{
	"tenant":         {"description": "The tenant's slug.", "schema": map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{1,62}$"}},
	"agent":          {"description": "The agent (AI employee): its id or its name.", "schema": map[string]any{"type": "string"}},
	"member":         {"description": "The member's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"key":            {"description": "The API key's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"client":         {"description": "The OAuth client's client_id, URL-escaped (a metadata document client_id is an https URL).", "schema": map[string]any{"type": "string"}},
	"grant":          {"description": "The grant's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"request":        {"description": "The capability request's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"belief":         {"description": "The belief's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"source_key":     {"description": "A knowledge source key: round:<id>, run:<id> or call:<id>.", "schema": map[string]any{"type": "string"}},
	"round":          {"description": "The round token's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"name":           {"description": "The reserved agent name.", "schema": map[string]any{"type": "string"}},
	"task":           {"description": "The task's or goal's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"routine":        {"description": "The routine's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"reminder":       {"description": "The reminder's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"endpoint":       {"description": "The push endpoint's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"wakeup":         {"description": "The wake-up's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"responsibility": {"description": "The responsibility's id.", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"question":       {"description": "The question's id (a wake-up of kind question).", "schema": map[string]any{"type": "string", "format": "uuid"}},
	"source":         {"description": "The database source: its id or its name.", "schema": map[string]any{"type": "string"}},
	"server":         {"description": "The upstream MCP server: its id or its name.", "schema": map[string]any{"type": "string"}},
	"secret_kind":    {"description": "What the secret is: header (a remote server's) or env (a stdio server's).", "schema": map[string]any{"type": "string", "enum": []string{"header", "env"}}},
	"secret":         {"description": "The secret's name (the header or environment variable).", "schema": map[string]any{"type": "string"}},
}

// UndocumentedPathParams lists the path parameters of ops that pathParams
// does not describe.
func UndocumentedPathParams(ops []Operation) []string {
	var out []string
	for _, op := range ops {
		for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
			if _, ok := pathParams[m[1]]; !ok {
				out = append(out, op.ID+": "+m[1])
			}
		}
	}
	return out
}

// ErrorsOf are the error statuses op declares: 401 and 403 always (every
// admin route authenticates and authorizes), 404 with path parameters, 400
// with a body or query parameters, 413 with a body, and those op.Errors
// adds (409 for conflicts with the current state, 429 where a limit
// applies).
func ErrorsOf(op Operation) []int {
	set := map[int]bool{http.StatusUnauthorized: true, http.StatusForbidden: true}
	if pathParam.MatchString(op.Path) {
		set[http.StatusNotFound] = true
	}
	if op.Request != nil || len(op.Query) > 0 {
		set[http.StatusBadRequest] = true
	}
	if op.Request != nil {
		set[http.StatusRequestEntityTooLarge] = true
	}
	for _, s := range op.Errors {
		set[s] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// security lists the credentials op accepts, truthfully: the platform
// token alone for platform-only actions, otherwise an operator key, a
// member's session or the platform token.
func security(a identity.Action) ([]any, string) {
	if a.PlatformOnly() {
		return []any{map[string]any{"platformToken": []string{}}}, "Accepts only the platform admin token."
	}
	var roles []string
	for _, r := range identity.Roles {
		if r.Allows(a) {
			roles = append(roles, string(r))
		}
	}
	return []any{map[string]any{"operatorKey": []string{}}, map[string]any{"memberSession": []string{}}, map[string]any{"platformToken": []string{}}},
		fmt.Sprintf("Accepts an operator key with the %s scope, a member's session with the role %s, or the platform admin token.",
			a.Scope(), strings.Join(roles, ", "))
}

func (g *schemaGen) operation(op Operation) map[string]any {
	status := op.Status
	if status == 0 {
		status = http.StatusOK
	}
	ok := map[string]any{"description": http.StatusText(status)}
	if op.Response != nil {
		ok["content"] = jsonContent(g.ref(reflect.TypeOf(op.Response)))
	}
	if op.ResponseType != "" {
		content := map[string]any{}
		for _, mt := range strings.Split(op.ResponseType, ", ") {
			content[mt] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
		ok["content"] = content
	}
	responses := map[string]any{strconv.Itoa(status): ok, "5XX": map[string]any{"$ref": "#/components/responses/ServerError"}}
	for _, s := range ErrorsOf(op) {
		e, known := errorStatuses[s]
		if !known {
			panic(fmt.Sprintf("api: operation %s declares error %d, which the document does not describe", op.ID, s))
		}
		responses[strconv.Itoa(s)] = map[string]any{"$ref": "#/components/responses/" + e.name}
	}
	sec, accepts := security(op.Needs)
	desc := op.Description
	if desc != "" {
		desc += "\n\n"
	}
	o := map[string]any{
		"operationId": op.ID, "summary": op.Summary, "tags": []string{op.Tag}, "description": desc + accepts,
		"responses": responses, "x-visor-authority": authority(op.Needs), "security": sec,
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
		prm := map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}}
		if d, ok := pathParams[m[1]]; ok {
			prm["description"], prm["schema"] = d["description"], d["schema"]
		}
		params = append(params, prm)
	}
	for _, q := range op.Query {
		params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": q.schema()})
	}
	if params != nil {
		o["parameters"] = params
	}
	if op.Request != nil {
		o["requestBody"] = map[string]any{"required": !op.OptionalBody, "content": jsonContent(g.ref(reflect.TypeOf(op.Request)))}
	}
	return o
}

// authority describes what an operation needs: the action, the scope a
// credential must hold, and the member roles that may take it (none: only
// the platform admin token).
func authority(a identity.Action) map[string]any {
	roles := []string{}
	for _, r := range identity.Roles {
		if r.Allows(a) {
			roles = append(roles, string(r))
		}
	}
	return map[string]any{"action": string(a), "scope": a.Scope(), "roles": roles}
}

func jsonContent(schema map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// enums are the values of the string types that hold a closed set.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[identity.Role]():        roleNames(),
	reflect.TypeFor[identity.AgentStatus](): {string(identity.AgentActive), string(identity.AgentTrashed)},
	reflect.TypeFor[identity.KeyKind]():     {string(identity.KeyOperator), string(identity.KeyAgent)},
	reflect.TypeFor[grants.Status]():        {string(grants.Pending), string(grants.Approved), string(grants.Denied)},
	reflect.TypeFor[grants.EndReason]():     {string(grants.Revoked), string(grants.Expired), string(grants.TaskEnded)},
	reflect.TypeFor[dbsources.Kind]():       {string(dbsources.Postgres), string(dbsources.MySQL)},
}

func roleNames() []string {
	var out []string
	for _, r := range identity.Roles {
		out = append(out, string(r))
	}
	return out
}

// schemaGen builds JSON Schemas from Go types the way encoding/json
// encodes them, naming each struct once in components/schemas.
type schemaGen struct {
	schemas map[string]any
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	uuidType     = reflect.TypeFor[uuid.UUID]()
	schemaerType = reflect.TypeFor[Schemaer]()
	apiPkg       = reflect.TypeFor[API]().PkgPath()
)

// ref returns a schema for t, a $ref for named structs.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	switch {
	case t.Kind() != reflect.Pointer && t.Implements(schemaerType):
		return reflect.Zero(t).Interface().(Schemaer).JSONSchema()
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == uuidType:
		return map[string]any{"type": "string", "format": "uuid"}
	}
	if vals, ok := enums[t]; ok {
		return map[string]any{"type": "string", "enum": vals}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := g.ref(t.Elem())
		if ty, ok := inner["type"].(string); ok {
			out := map[string]any{}
			for k, v := range inner {
				out[k] = v
			}
			out["type"] = []string{ty, "null"}
			return out
		}
		return map[string]any{"oneOf": []any{inner, map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.ref(t.Elem())}
	case reflect.Array:
		return map[string]any{"type": "array", "items": g.ref(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.ref(t.Elem())}
	case reflect.Struct:
		name := schemaName(t)
		if _, ok := g.schemas[name]; !ok {
			g.schemas[name] = nil // claim the name first: types may recurse
			g.schemas[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func schemaName(t reflect.Type) string {
	if t.PkgPath() == apiPkg {
		return t.Name()
	}
	return path.Base(t.PkgPath()) + "." + t.Name()
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.ref(f.Type)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			required = append(required, name)
		}
	}
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		o["required"] = required
	}
	return o
}
