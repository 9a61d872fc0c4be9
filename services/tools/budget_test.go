package tools

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckBudgetFindsOverruns(t *testing.T) {
	r := NewRegistry()
	r.Register(Tool{Name: "long_tool", Scope: "tools:read", Handler: nop, Description: strings.Repeat("x", 201),
		Params: []Param{{Name: "p", Type: "string", Description: strings.Repeat("y", 201)}}})
	require.Len(t, CheckBudget(r, nil), 2)
}

func TestExemptionsFailWhenNoLongerNeeded(t *testing.T) {
	r := NewRegistry()
	r.Register(Tool{Name: "team_handoff", Scope: "tools:write", Handler: nop, Description: "Hand off a task.",
		Params: []Param{{Name: "packet", Type: "string", Description: strings.Repeat("z", 900)}}})
	require.Empty(t, CheckBudget(r, map[string]int{"team_handoff.packet": 1024}), "a needed exemption passes")
	require.Len(t, CheckBudget(r, map[string]int{"team_handoff.packet": 800}), 1, "over its own cap")

	r2 := NewRegistry()
	r2.Register(Tool{Name: "team_handoff", Scope: "tools:write", Handler: nop, Description: "Hand off a task.",
		Params: []Param{{Name: "packet", Type: "string", Description: "short now"}}})
	require.Len(t, CheckBudget(r2, map[string]int{"team_handoff.packet": 1024}), 1, "fits the budget: exemption stale")
	require.Len(t, CheckBudget(NewRegistry(), map[string]int{"team_handoff.packet": 1024}), 1, "param gone: exemption stale")
}
