package tools

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// FuzzToolArgs: any arguments object is either refused as invalid or
// accepted with every declared type holding; an accepted integer is
// exactly the number sent (checked against math/big for plain decimals).
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `[]`, `{"n":12}`, `{"n":1e300}`, `{"n":12.5}`, `{"n":-9223372036854775808}`,
		`{"n":9223372036854775808}`, `{"n":1.2e1}`, `{"n":"12"}`, `{"s":"x","b":true,"a":[1],"o":{}}`, `{"x":1}`, `{"n":1e-99999999999}`} {
		f.Add(s)
	}
	r := NewRegistry()
	r.Register(Tool{Name: "fuzz_target", Description: "d", Scope: identity.ScopeToolsRead, Handler: nop, Params: []Param{
		{Name: "n", Type: "integer", Description: "n"}, {Name: "f", Type: "number", Description: "f"},
		{Name: "s", Type: "string", Description: "s"}, {Name: "b", Type: "boolean", Description: "b"},
		{Name: "a", Type: "array", Description: "a"}, {Name: "o", Type: "object", Description: "o"}}})
	tool, _ := r.Get("fuzz_target")
	f.Fuzz(func(t *testing.T, raw string) {
		args, err := DecodeArgs(json.RawMessage(raw))
		if err != nil {
			if fault.CodeOf(err) != fault.Invalid {
				t.Fatalf("DecodeArgs(%q): %v", raw, err)
			}
			return
		}
		var sent any
		if n, ok := args["n"].(json.Number); ok {
			sent = string(n)
		}
		if err := r.CheckArgs(tool, args); err != nil {
			if fault.CodeOf(err) != fault.Invalid {
				t.Fatalf("CheckArgs(%q): %v", raw, err)
			}
			return
		}
		_ = r.Digest(tool, args)
		if _, ok := args["n"]; !ok {
			return
		}
		n, ok := Int(args, "n")
		if !ok {
			t.Fatalf("CheckArgs accepted n in %q but Int cannot read it", raw)
		}
		text, _ := sent.(string)
		if strings.ContainsAny(text, "eE") || len(text) > 400 {
			return
		}
		want, ok := new(big.Rat).SetString(text)
		if !ok || !want.IsInt() || want.Num().Cmp(big.NewInt(n)) != 0 {
			t.Fatalf("n %q was accepted as %d", text, n)
		}
	})
}
