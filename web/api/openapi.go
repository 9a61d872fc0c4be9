package api

import (
	"encoding/json"
	"net/http"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// Schemaer lets a wire type describe itself in the OpenAPI document when
// reflection cannot (custom JSON encodings).
type Schemaer interface {
	JSONSchema() map[string]any
}

// JSONSchema describes OptionalID: a UUID or null.
func (OptionalID) JSONSchema() map[string]any {
	return map[string]any{"type": []string{"string", "null"}, "format": "uuid"}
}

var pathParam = regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)

// OpenAPIPath turns an echo path (/tenants/:tenant) into an OpenAPI one
// (/tenants/{tenant}).
func OpenAPIPath(echoPath string) string { return pathParam.ReplaceAllString(echoPath, "{$1}") }

// Document returns the OpenAPI 3.1 document of every operation, as
// indented JSON with sorted keys (stable, so it can be a golden file).
func (a *API) Document() []byte {
	g := &schemaGen{schemas: map[string]any{}}
	errRef := g.ref(reflect.TypeFor[ErrorBody]())
	paths := map[string]map[string]any{}
	paths[DocPath] = map[string]any{"get": map[string]any{
		"operationId": "getOpenAPI", "summary": "This document", "tags": []string{"meta"}, "security": []any{},
		"responses": map[string]any{"200": map[string]any{"description": "The OpenAPI 3.1 document",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}}},
	}}
	for _, op := range a.Operations() {
		p := OpenAPIPath(path.Join(Prefix, op.Path))
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(op.Method)] = g.operation(op, errRef)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Visor admin API",
			"version": "v1",
			"description": "Manage tenants, members, agents, agent settings and API keys. Authenticate with an " +
				"operator key (Authorization: Bearer vsk_...), a member's dashboard session cookie, or the platform " +
				"admin token (VISOR_ADMIN_TOKEN); OAuth access tokens and AI employees' credentials are refused. " +
				"Each operation's x-visor-authority names the action it needs, the scope a key must hold and the " +
				"member roles allowed. Errors are {\"error\":{\"code\",\"message\"}}.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.schemas,
			"securitySchemes": map[string]any{
				"bearer":  map[string]any{"type": "http", "scheme": "bearer", "description": "An operator key (vsk_...) or the platform admin token"},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": "visor_session", "description": "A member's dashboard session"},
			},
		},
		"security": []any{map[string]any{"bearer": []string{}}, map[string]any{"session": []string{}}},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // only maps, slices and strings: cannot fail
	}
	return append(b, '\n')
}

func (g *schemaGen) operation(op Operation, errRef map[string]any) map[string]any {
	status := op.Status
	if status == 0 {
		status = http.StatusOK
	}
	ok := map[string]any{"description": http.StatusText(status)}
	if op.Response != nil {
		ok["content"] = jsonContent(g.ref(reflect.TypeOf(op.Response)))
	}
	errResp := func(why string) map[string]any {
		return map[string]any{"description": why, "content": jsonContent(errRef)}
	}
	responses := map[string]any{
		strconv.Itoa(status): ok,
		"401":                errResp("No valid credential"),
		"403":                errResp("The credential may not do this"),
		"default":            errResp("Any other error: 400 invalid_argument, 404 not_found, 409 conflict, 413 too_large, 503 unavailable"),
	}
	o := map[string]any{
		"operationId": op.ID, "summary": op.Summary, "tags": []string{op.Tag},
		"responses": responses, "x-visor-authority": authority(op.Needs),
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range op.Query {
		schema := map[string]any{"type": q.Type}
		if len(q.Enum) > 0 {
			schema["enum"] = q.Enum
		}
		params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": schema})
	}
	if params != nil {
		o["parameters"] = params
	}
	if op.Request != nil {
		o["requestBody"] = map[string]any{"required": true, "content": jsonContent(g.ref(reflect.TypeOf(op.Request)))}
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
