package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestConvertWritesStandaloneStrictSchemas: a kind's schema has its $refs
// inlined, objects closed to unknown properties, IntOrString as either,
// and the file name kubeconform looks for.
func TestConvertWritesStandaloneStrictSchemas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	swagger := `{"definitions": {
	  "io.k8s.api.policy.v1.PodDisruptionBudget": {
	    "x-kubernetes-group-version-kind": [{"group": "policy", "kind": "PodDisruptionBudget", "version": "v1"}],
	    "properties": {"spec": {"$ref": "#/definitions/io.k8s.api.policy.v1.PodDisruptionBudgetSpec"}}},
	  "io.k8s.api.policy.v1.PodDisruptionBudgetSpec": {
	    "properties": {"minAvailable": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
	                   "self": {"$ref": "#/definitions/io.k8s.api.policy.v1.PodDisruptionBudgetSpec"}}},
	  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
	  "io.k8s.api.core.v1.ConfigMap": {
	    "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}],
	    "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}}}
	}}`
	in := filepath.Join(dir, "swagger.json")
	if err := os.WriteFile(in, []byte(swagger), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := convert(in, filepath.Join(dir, "out"))
	if err != nil || n != 2 {
		t.Fatalf("convert: %d schemas, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "configmap-v1.json")); err != nil {
		t.Fatal("the core group's file is {kind}-{version}.json:", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "out", "poddisruptionbudget-policy-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		AdditionalProperties *bool `json:"additionalProperties"`
		Properties           struct {
			Spec struct {
				AdditionalProperties *bool `json:"additionalProperties"`
				Properties           map[string]map[string]any
			}
		}
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.AdditionalProperties == nil || *s.AdditionalProperties || s.Properties.Spec.AdditionalProperties == nil || *s.Properties.Spec.AdditionalProperties {
		t.Fatalf("objects must be closed: %s", raw)
	}
	if _, ok := s.Properties.Spec.Properties["minAvailable"]["oneOf"]; !ok {
		t.Fatalf("IntOrString must accept a string or an integer: %s", raw)
	}
	if len(s.Properties.Spec.Properties["self"]) != 0 {
		t.Fatalf("a definition that refers back to itself becomes any value: %s", raw)
	}
}
