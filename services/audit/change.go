package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Masked replaces a secret's value in an operator action's change.
const Masked = "(set)"

// MaskedChange returns the change of an operator action as an audit row
// holds it — body (a JSON request body, or the CLI's flags as a JSON
// object) re-encoded compactly with the value of every secret field (a
// password, a secret, a token) replaced by Masked — and the SHA-256 of it,
// the row's digest. A body that is not JSON is never copied, since it may
// hold a secret in a shape the mask cannot see: the change only says how
// long it was. Re-encoding escapes NUL bytes and replaces invalid UTF-8,
// so whatever a caller sends, the row can be stored.
func MaskedChange(body []byte) (change, digest string) {
	if len(bytes.TrimSpace(body)) > 0 {
		var v any
		out, err := []byte(nil), json.Unmarshal(body, &v)
		if err == nil {
			out, err = json.Marshal(mask(v))
		}
		change = string(out)
		if err != nil {
			change = fmt.Sprintf(`{"unreadable_body_bytes":%d}`, len(body))
		}
	}
	sum := sha256.Sum256([]byte(change))
	return change, hex.EncodeToString(sum[:])
}

func mask(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if SecretField(k) {
				x[k] = Masked
				continue
			}
			x[k] = mask(val)
		}
	case []any:
		for i := range x {
			x[i] = mask(x[i])
		}
	}
	return v
}

// SecretField reports whether a field (or CLI flag) of that name holds a
// secret whose value an audit row never shows. A connection string is
// one: it may carry a password.
func SecretField(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	return strings.Contains(n, "password") || strings.Contains(n, "connection_string") || strings.Contains(n, "secret") || n == "token" ||
		strings.HasSuffix(n, "_token") || strings.Contains(n, "api_key") || strings.Contains(n, "private_key") ||
		n == "authorization"
}

// Clean makes s storable in a text column: valid UTF-8 without NUL.
func Clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
