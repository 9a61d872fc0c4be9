package tools

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/identity"
)

// Registry holds every declared tool, in name order.
type Registry struct {
	byName  map[string]*Tool
	ordered []*Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]*Tool{}} }

var (
	toolNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	paramTypes = []string{"string", "integer", "number", "boolean", "array", "object"}
	toolScopes = []string{identity.ScopeToolsRead, identity.ScopeToolsWrite, identity.ScopeToolsAdmin}
)

// Register declares t. It panics on a malformed declaration: declarations
// are code, and a broken one must fail the first test that builds the
// registry, not a caller at run time.
func (r *Registry) Register(t Tool) {
	if err := r.check(&t); err != nil {
		panic(fmt.Sprintf("tools: register %q: %v", t.Name, err))
	}
	r.byName[t.Name] = &t
	i, _ := slices.BinarySearchFunc(r.ordered, t.Name, func(a *Tool, n string) int { return strings.Compare(a.Name, n) })
	r.ordered = slices.Insert(r.ordered, i, &t)
}

func (r *Registry) check(t *Tool) error {
	switch {
	case !toolNameRE.MatchString(t.Name):
		return fmt.Errorf("name must be snake_case")
	case r.byName[t.Name] != nil:
		return fmt.Errorf("declared twice")
	case t.DeprecatedFor != "":
		if t.Handler != nil || len(t.Params) > 0 {
			return fmt.Errorf("a deprecated alias declares no handler or params")
		}
		return nil
	case t.Handler == nil:
		return fmt.Errorf("no handler")
	case !slices.Contains(toolScopes, t.Scope):
		return fmt.Errorf("scope %q must be one of %v", t.Scope, toolScopes)
	case !t.Gate.Known():
		return fmt.Errorf("unknown gate %q", t.Gate)
	}
	seen := map[string]bool{}
	for _, p := range t.Params {
		if !toolNameRE.MatchString(p.Name) || seen[p.Name] || !slices.Contains(paramTypes, p.Type) {
			return fmt.Errorf("param %q: needs a unique snake_case name and a type of %v", p.Name, paramTypes)
		}
		seen[p.Name] = true
	}
	return nil
}

// Get returns the tool named name.
func (r *Registry) Get(name string) (*Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// All returns every tool in name order. The slice must not be modified.
func (r *Registry) All() []*Tool { return r.ordered }

// Target returns the tool t dispatches to: itself, or its alias target.
func (r *Registry) Target(t *Tool) *Tool {
	if t.DeprecatedFor != "" {
		if target, ok := r.byName[t.DeprecatedFor]; ok {
			return target
		}
	}
	return t
}

// CheckAliases reports aliases whose target is not declared.
func (r *Registry) CheckAliases() error {
	for _, t := range r.ordered {
		if t.DeprecatedFor != "" && r.byName[t.DeprecatedFor] == nil {
			return fmt.Errorf("tools: %s is a deprecated alias of undeclared %s", t.Name, t.DeprecatedFor)
		}
	}
	return nil
}

// ListedDescription is the description tools/list shows: a deprecated alias
// carries the "[deprecated → new]" prefix before its target's description.
func (r *Registry) ListedDescription(t *Tool) string {
	if t.DeprecatedFor == "" {
		return t.Description
	}
	return "[deprecated → " + t.DeprecatedFor + "] " + r.Target(t).Description
}

// InputSchema returns t's JSON Schema for its arguments (its target's, for
// an alias).
func (r *Registry) InputSchema(t *Tool) map[string]any {
	t = r.Target(t)
	props := make(map[string]any, len(t.Params))
	required := []string{}
	for _, p := range t.Params {
		props[p.Name] = map[string]any{"type": p.Type, "description": p.Description}
		if p.Required {
			required = append(required, p.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}
