package upstreams

import (
	"crypto/sha256"
	"encoding/json"
	"net/url"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/visorhq/visor/services/fault"
)

// maxArgsBytes caps one call's arguments.
const maxArgsBytes = 1 << 20

// resolved caches resolved input schemas by their bytes' hash. A $ref to
// a remote schema is never fetched: it stands for any value, and the rest
// of the schema is checked. A schema the validator cannot read at all is
// kept as nil (a refresh stores no tool with one).
var resolved = struct {
	sync.Mutex
	m map[[32]byte]*jsonschema.Resolved
}{m: map[[32]byte]*jsonschema.Resolved{}}

const maxResolved = 4096

// checkArgs checks args against t's input schema and returns them as
// JSON. Failures are Invalid with the validator's message.
func checkArgs(t Tool, args map[string]any) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fault.New(fault.Invalid, "arguments must be a JSON object")
	}
	if len(raw) > maxArgsBytes {
		return nil, fault.New(fault.TooLarge, "arguments must be at most %d bytes", maxArgsBytes)
	}
	rs := resolve(t.InputSchema)
	if rs == nil { // a refresh keeps no such tool; never send unchecked arguments
		return nil, fault.New(fault.Invalid, "the input schema of %s:%s cannot be read, so its arguments cannot be checked; refresh the server", t.Server, t.Name)
	}
	var inst any // numbers as float64, as the validator expects
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fault.New(fault.Invalid, "arguments must be a JSON object")
	}
	if err := rs.Validate(inst); err != nil {
		return nil, fault.New(fault.Invalid, "arguments do not match the input schema of %s:%s (read it with mcp_tool_inspect): %s", t.Server, t.Name, cut(err.Error(), 500))
	}
	return raw, nil
}

func resolve(schema json.RawMessage) *jsonschema.Resolved {
	key := sha256.Sum256(schema)
	resolved.Lock()
	rs, ok := resolved.m[key]
	resolved.Unlock()
	if ok {
		return rs
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err == nil {
		rs, _ = s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false, Loader: anyValue})
	}
	resolved.Lock()
	if len(resolved.m) >= maxResolved {
		clear(resolved.m)
	}
	resolved.m[key] = rs
	resolved.Unlock()
	return rs
}

// anyValue stands in for a remote schema a $ref names: Visor fetches
// nothing an upstream's schema points at, and lets the upstream check
// that part.
func anyValue(*url.URL) (*jsonschema.Schema, error) { return &jsonschema.Schema{}, nil }
