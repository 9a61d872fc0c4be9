package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"

	"github.com/visorhq/visor/services/fault"
)

// DecodeArgs decodes a call's arguments object; absent or null is empty.
// Numbers stay json.Number so integers survive.
func DecodeArgs(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil || args == nil {
			return nil, fault.New(fault.Invalid, "arguments must be a JSON object")
		}
	}
	return args, nil
}

// CheckArgs checks decoded arguments against t's declared params: no unknown
// names, every required one present, each of its declared JSON type.
// Failures are fault.Invalid with a message the model can act on.
func (r *Registry) CheckArgs(t *Tool, args map[string]any) error {
	t = r.Target(t)
	declared := make(map[string]Param, len(t.Params))
	for _, p := range t.Params {
		declared[p.Name] = p
		if _, ok := args[p.Name]; p.Required && !ok {
			return fault.New(fault.Invalid, "missing required parameter %s", p.Name)
		}
	}
	for name, v := range args {
		p, ok := declared[name]
		if !ok {
			return fault.New(fault.Invalid, "unknown parameter %s", name)
		}
		if !hasType(v, p.Type) {
			return fault.New(fault.Invalid, "parameter %s must be of type %s", name, p.Type)
		}
	}
	return nil
}

func hasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f)
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

// Digest returns a SHA-256 digest of a call's arguments for the audit trail,
// with every Secret parameter left out, so no secret (nor a hash of one) is
// ever stored.
func (r *Registry) Digest(t *Tool, args map[string]any) string {
	clean := make(map[string]any, len(args))
	for k, v := range args {
		clean[k] = v
	}
	if t != nil {
		for _, p := range r.Target(t).Params {
			if p.Secret {
				delete(clean, p.Name)
			}
		}
	}
	b, _ := json.Marshal(clean) // map keys marshal sorted: a canonical form
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Int reads an integer argument that ParseArgs checked.
func Int(args map[string]any, name string) (int64, bool) {
	n, ok := args[name].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// String reads a string argument.
func String(args map[string]any, name string) (string, bool) {
	s, ok := args[name].(string)
	return s, ok
}
