package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoToolCreatesChangesOrResumesAResponsibility: responsibilities are
// set up and changed only by operators through the admin API. The served
// catalog's only tools touching them are the employee's read and its two
// wake-up tools, none of which takes a field an operator sets.
func TestNoToolCreatesChangesOrResumesAResponsibility(t *testing.T) {
	t.Parallel()
	var touching []string
	for _, tl := range servedRegistry().All() {
		if strings.Contains(tl.Name, "responsib") || tl.Family == "responsibilities" {
			touching = append(touching, tl.Name)
			for _, p := range tl.Params {
				require.NotContains(t, []string{"status", "charter", "schedule", "run_limit", "followup_limit", "spend_cap_cents",
					"stop_at", "subscriptions", "epoch"}, p.Name, "%s takes %s, which only operators set", tl.Name, p.Name)
			}
		}
	}
	slices.Sort(touching)
	require.Equal(t, []string{"responsibility_ask", "responsibility_followup", "responsibility_get"}, touching)
}
