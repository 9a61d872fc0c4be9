package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

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
		if t.StringScalars {
			v = fromString(v, p.Type)
			args[name] = v
		}
		if p.Type == "integer" {
			n, ok := v.(json.Number)
			if !ok {
				return fault.New(fault.Invalid, "parameter %s must be of type integer", name)
			}
			i, err := integer(string(n))
			if err != nil {
				return fault.New(fault.Invalid, "parameter %s %s", name, err)
			}
			args[name] = json.Number(strconv.FormatInt(i, 10)) // Int reads it
			continue
		}
		if !hasType(v, p.Type) {
			return fault.New(fault.Invalid, "parameter %s must be of type %s", name, p.Type)
		}
	}
	return nil
}

// integer reads a JSON number exactly as an int64: 12, 1.2e1 and 12.0 are
// 12; 12.5 is not an integer, and 1e300 or 2^63 does not fit. It never
// expands an exponent it does not need to, so a huge one costs nothing.
func integer(n string) (int64, error) {
	errNot := errors.New("must be an integer")
	errRange := fmt.Errorf("must be an integer from %d to %d", int64(math.MinInt64), int64(math.MaxInt64))
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		return i, nil
	}
	neg := strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	mant, exp := n, int64(0)
	if k := strings.IndexAny(n, "eE"); k >= 0 {
		e, err := strconv.ParseInt(strings.TrimPrefix(n[k+1:], "+"), 10, 64)
		switch {
		case err != nil && strings.HasPrefix(n[k+1:], "-"):
			return 0, errNot // 10^-huge of a non-zero mantissa
		case err != nil:
			exp = 1 << 40 // 10^+huge
		default:
			// Clamped far beyond any length a body can have, so the
			// arithmetic below cannot overflow.
			exp = min(max(e, -1<<40), 1<<40)
		}
		mant = n[:k]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	exp -= int64(len(frac))
	if digits == "" {
		return 0, nil // zero, however written
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	switch {
	case exp < 0:
		return 0, errNot
	case int64(len(trimmed))+exp > 19:
		return 0, errRange
	}
	text := trimmed + strings.Repeat("0", int(exp))
	if neg {
		text = "-" + text
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, errRange
	}
	return i, nil
}

var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// fromString reads "12" as the number 12 for an integer parameter and
// "true"/"false" as a boolean for a boolean one; anything else is returned
// as it is, for CheckArgs to refuse.
func fromString(v any, typ string) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	switch typ {
	case "integer":
		if len(s) <= 64 && jsonNumberRE.MatchString(s) {
			return json.Number(s)
		}
	case "boolean":
		switch s {
		case "true":
			return true
		case "false":
			return false
		}
	}
	return v
}

// AuditNote returns what the audit row keeps of t's secret parameters in
// args: a character count, a host or a keyed hash, as each declares, as a
// JSON object; "" when there is nothing to keep.
func (r *Registry) AuditNote(t *Tool, tenantKey string, args map[string]any) string {
	note := map[string]any{}
	for _, p := range r.Target(t).Params {
		v, ok := args[p.Name].(string)
		if !ok || !p.Secret {
			continue
		}
		switch p.Audit {
		case AuditChars:
			note[p.Name+"_chars"] = utf8.RuneCountInString(v)
		case AuditHash:
			sum := sha256.Sum256([]byte(tenantKey + "\x00" + v))
			note[p.Name+"_sha256"] = hex.EncodeToString(sum[:])
		case AuditHost:
			if u, err := url.Parse(v); err == nil && u.Hostname() != "" {
				note[p.Name+"_host"] = strings.ToLower(u.Hostname())
			} else {
				note[p.Name+"_host"] = ""
			}
		}
	}
	if len(note) == 0 {
		return ""
	}
	b, _ := json.Marshal(note)
	return string(b)
}

// MergeNote adds note's keys to change, an audit row's change summary (a
// JSON object, or ""), and returns the result; keys already in change are
// kept.
func MergeNote(change string, note map[string]any) string {
	if len(note) == 0 {
		return change
	}
	merged := map[string]any{}
	for k, v := range note {
		merged[k] = v
	}
	if change != "" {
		var old map[string]any
		if json.Unmarshal([]byte(change), &old) == nil {
			for k, v := range old {
				merged[k] = v
			}
		}
	}
	b, _ := json.Marshal(merged)
	return string(b)
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

// Int reads an integer argument that CheckArgs checked.
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
