// Command kubeschema turns a Kubernetes OpenAPI v2 document (swagger.json)
// into the JSON schemas kubeconform reads, one file per kind named
// {kind}-{group}-{version}.json ({kind}-{version}.json for the core group),
// standalone (every $ref inlined) and strict (no property a schema does
// not name), so the Helm chart is validated without network access:
//
//	go run ./deploy/helm/kubeschema -in swagger.json -out DIR
//	kubeconform -strict -schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json' ...
//
// CI takes swagger.json from a Kubernetes Go module (k8s.io/cli-runtime
// ships the API's document under artifacts/openapi).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	in := flag.String("in", "", "Kubernetes swagger.json")
	out := flag.String("out", "", "directory to write the schemas to")
	flag.Parse()
	if *in == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	n, err := convert(*in, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
	fmt.Printf("kubeschema: %d schemas in %s\n", n, *out)
}

type gvk struct{ Group, Version, Kind string }

func convert(in, out string) (int, error) {
	raw, err := os.ReadFile(in)
	if err != nil {
		return 0, err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return 0, fmt.Errorf("%s: %v", in, err)
	}
	if len(doc.Definitions) == 0 {
		return 0, fmt.Errorf("%s has no definitions", in)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	n := 0
	for name, def := range doc.Definitions {
		kinds, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, k := range kinds {
			b, _ := json.Marshal(k)
			var g gvk
			if err := json.Unmarshal(b, &g); err != nil || g.Kind == "" || g.Version == "" {
				continue
			}
			schema := inline(def, doc.Definitions, map[string]bool{name: true})
			file := strings.ToLower(g.Kind) + "-"
			if g.Group != "" {
				file += strings.ToLower(strings.Split(g.Group, ".")[0]) + "-"
			}
			file += strings.ToLower(g.Version) + ".json"
			b, err := json.Marshal(schema)
			if err != nil {
				return n, err
			}
			if err := os.WriteFile(filepath.Join(out, file), b, 0o644); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

const refPrefix = "#/definitions/"

// inline copies v with every $ref replaced by the definition it names
// (a definition that refers back to itself becomes "any value"), every
// object with properties closed to others, and the two string-or-number
// types (IntOrString, Quantity) accepting both.
func inline(v any, defs map[string]map[string]any, seen map[string]bool) any {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, refPrefix) {
			name := strings.TrimPrefix(ref, refPrefix)
			if seen[name] {
				return map[string]any{}
			}
			def, ok := defs[name]
			if !ok {
				return map[string]any{}
			}
			seen[name] = true
			r := inline(def, defs, seen)
			delete(seen, name)
			if d, ok := v["description"]; ok {
				if m, ok := r.(map[string]any); ok {
					m["description"] = d
				}
			}
			return r
		}
		if v["format"] == "int-or-string" {
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
		}
		out := make(map[string]any, len(v)+1)
		for k, x := range v {
			if strings.HasPrefix(k, "x-kubernetes-") {
				continue
			}
			if k == "properties" { // names of properties, not schema keywords
				props := map[string]any{}
				for p, s := range x.(map[string]any) {
					props[p] = inline(s, defs, seen)
				}
				out[k] = props
				continue
			}
			out[k] = inline(x, defs, seen)
		}
		if _, ok := out["properties"]; ok {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = inline(x, defs, seen)
		}
		return out
	default:
		return v
	}
}
