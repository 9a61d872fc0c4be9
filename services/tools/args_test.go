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
