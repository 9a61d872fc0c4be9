package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// Undocumented compares echo's routes under Prefix with the paths of an
// OpenAPI document and returns one line per difference: a route that is
// registered but not documented, or documented but not registered. Tests
// of the fully wired server call it, so a route added behind the API's
// back (or a stale document) fails the build.
func Undocumented(e *echo.Echo, doc []byte) []string {
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return []string{"the OpenAPI document is not JSON: " + err.Error()}
	}
	documented := map[string]bool{}
	for p, ops := range d.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	registered := map[string]bool{}
	for _, r := range e.Routes() {
		if !strings.HasPrefix(r.Path, Prefix+"/") || r.Method == echo.RouteNotFound || !isMethod(r.Method) {
			continue
		}
		registered[r.Method+" "+OpenAPIPath(r.Path)] = true
	}
	var out []string
	for k := range registered {
		if !documented[k] {
			out = append(out, fmt.Sprintf("%s: registered but not in the OpenAPI document", k))
		}
	}
	for k := range documented {
		if !registered[k] {
			out = append(out, fmt.Sprintf("%s: in the OpenAPI document but not registered", k))
		}
	}
	slices.Sort(out)
	return out
}

func isMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}
