package upstreams

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/visorhq/visor/services/fault"
)

// toolNameOK reports whether a server's tool name can be stored and
// called: 1-128 bytes of letters, digits and "_-./" (the MCP rule).
func toolNameOK(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./", r)) {
			return false
		}
	}
	return true
}

// cleanTools keeps what a refresh stores of a server's list: tools with a
// valid, unique name, descriptions cut to maxToolDescription bytes, and
// schemas of at most maxSchemaBytes, whose input schema Visor can read
// (so every call's arguments are checked). A tool that breaks a rule is
// left out; a list with none usable but some listed is an error.
func cleanTools(server string, list []Tool) ([]Tool, error) {
	out := make([]Tool, 0, len(list))
	seen := map[string]bool{}
	for _, t := range list {
		if !toolNameOK(t.Name) || seen[t.Name] || len(t.InputSchema) > maxSchemaBytes || len(t.OutputSchema) > maxSchemaBytes ||
			len(t.Annotations) > maxSchemaBytes {
			continue
		}
		seen[t.Name] = true
		t.Server = server
		t.Description = cut(t.Description, maxToolDescription)
		t.Title = cut(t.Title, 200)
		if len(bytes.TrimSpace(t.InputSchema)) == 0 || string(t.InputSchema) == "null" {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		if resolve(t.InputSchema) == nil {
			continue // its arguments could not be checked before a call
		}
		out = append(out, t)
	}
	if len(out) == 0 && len(list) > 0 {
		return nil, fault.New(fault.Invalid, "none of the %d tools %s listed has a usable name and schema", len(list), server)
	}
	return out, nil
}

// cut returns s cut to at most n bytes on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
