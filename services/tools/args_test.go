package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// TestIntegerArgumentsAreExact: an integer parameter takes any JSON spelling
// of an integer that fits int64 and refuses, as an invalid argument, one
// that is not integral or does not fit, instead of passing it on for Int to
// drop.
func TestIntegerArgumentsAreExact(t *testing.T) {
	r := NewRegistry()
	r.Register(Tool{Name: "set_budget", Description: "d", Scope: identity.ScopeToolsWrite, Handler: nop, Params: []Param{{Name: "n", Type: "integer", Description: "n"}}})
	tool, _ := r.Get("set_budget")
	for _, tc := range []struct {
		in   string
		want int64
		bad  string // substring of the refusal; "" = accepted
	}{
		{in: "12", want: 12},
		{in: "-12", want: -12},
		{in: "0", want: 0},
		{in: "-0", want: 0},
		{in: "0e999999999999999999999", want: 0},
		{in: "1.2e1", want: 12},
		{in: "12.000", want: 12},
		{in: "1200e-2", want: 12},
		{in: "9223372036854775807", want: 9223372036854775807},
		{in: "-9223372036854775808", want: -9223372036854775808},
		{in: "-9.223372036854775808e18", want: -9223372036854775808},
		{in: "12.5", bad: "must be an integer"},
		{in: "1e-1", bad: "must be an integer"},
		{in: "1e-99999999999999999999", bad: "must be an integer"},
		{in: "1.5e-9223372036854775808", bad: "must be an integer"},
		{in: "1e300", bad: "from -9223372036854775808 to 9223372036854775807"},
		{in: "9223372036854775808", bad: "from -9223372036854775808"},
		{in: "-9223372036854775809", bad: "from -9223372036854775808"},
		{in: "1e9223372036854775807", bad: "from -9223372036854775808"},
		{in: "1e99999999999999999999", bad: "from -9223372036854775808"},
		{in: "1" + strings.Repeat("0", 30), bad: "from -9223372036854775808"},
		{in: `"12"`, bad: "must be of type integer"},
	} {
		args, err := DecodeArgs(json.RawMessage(`{"n":` + tc.in + `}`))
		require.NoError(t, err, tc.in)
		err = r.CheckArgs(tool, args)
		if tc.bad != "" {
			require.Error(t, err, tc.in)
			require.Equal(t, fault.Invalid, fault.CodeOf(err), tc.in)
			require.Contains(t, fault.Message(err), "parameter n ", tc.in)
			require.Contains(t, fault.Message(err), tc.bad, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		n, ok := Int(args, "n")
		require.True(t, ok, tc.in)
		require.Equal(t, tc.want, n, tc.in)
	}
}

// TestStringScalars: a tool that opts in takes "12" for an integer and
// "true"/"false" for a boolean; anything else stays refused, and a tool
// that does not opt in refuses strings as before.
func TestStringScalars(t *testing.T) {
	r := NewRegistry()
	params := []Param{{Name: "n", Type: "integer", Description: "n"}, {Name: "b", Type: "boolean", Description: "b"}}
	r.Register(Tool{Name: "lenient", Description: "d", Scope: identity.ScopeToolsWrite, Handler: nop, Params: params, StringScalars: true})
	r.Register(Tool{Name: "strict", Description: "d", Scope: identity.ScopeToolsWrite, Handler: nop, Params: params})
	lenient, _ := r.Get("lenient")
	strict, _ := r.Get("strict")
	args := map[string]any{"n": "12", "b": "true"}
	require.NoError(t, r.CheckArgs(lenient, args))
	n, _ := Int(args, "n")
	require.Equal(t, int64(12), n)
	require.Equal(t, true, args["b"])
	require.NoError(t, r.CheckArgs(lenient, map[string]any{"n": "1.2e1", "b": "false"}))
	for _, bad := range []map[string]any{{"n": "twelve"}, {"n": "12.5"}, {"n": " 12"}, {"n": "0x10"}, {"n": "Inf"}, {"b": "yes"}, {"b": "TRUE"}} {
		require.True(t, fault.Is(r.CheckArgs(lenient, bad), fault.Invalid), "%v", bad)
	}
	require.True(t, fault.Is(r.CheckArgs(strict, map[string]any{"n": "12"}), fault.Invalid))
}

// TestAuditNoteKeepsOnlySummaries: a secret parameter leaves a character
// count, a host or a keyed hash in the audit row, never its value.
func TestAuditNoteKeepsOnlySummaries(t *testing.T) {
	r := NewRegistry()
	r.Register(Tool{Name: "t", Description: "d", Scope: identity.ScopeToolsWrite, Handler: nop, Params: []Param{
		{Name: "text", Type: "string", Description: "d", Secret: true, Audit: AuditChars},
		{Name: "url", Type: "string", Description: "d", Secret: true, Audit: AuditHost},
		{Name: "path", Type: "string", Description: "d", Secret: true, Audit: AuditHash},
		{Name: "other", Type: "string", Description: "d", Secret: true}}})
	tool, _ := r.Get("t")
	args := map[string]any{"text": "hunter2 語", "url": "https://Shop.Test/cart?card=4111", "path": "secret/plan.txt", "other": "pw"}
	note := r.AuditNote(tool, "tenant-a", args)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(note), &got))
	require.Equal(t, float64(9), got["text_chars"])
	require.Equal(t, "shop.test", got["url_host"])
	require.Len(t, got["path_sha256"], 64)
	require.Len(t, got, 3)
	for _, v := range []string{"hunter2", "cart", "4111", "plan", "pw"} {
		require.NotContains(t, note, v)
	}
	require.NotEqual(t, note, r.AuditNote(tool, "tenant-b", args), "the path hash is keyed by tenant")
	require.Empty(t, r.AuditNote(tool, "tenant-a", map[string]any{}))
	d := r.Digest(tool, args)
	require.Equal(t, r.Digest(tool, map[string]any{}), d, "secret values stay out of the digest")
}
