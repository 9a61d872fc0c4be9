package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// servedFamilies maps each family the MCP endpoint serves to its tools.
func servedFamilies() map[string][]string {
	fams := map[string][]string{}
	for _, t := range servedRegistry().All() {
		fams[t.Family] = append(fams[t.Family], t.Name)
	}
	return fams
}

// section returns the text of doc from the heading start to the next
// heading of the same level.
func section(t *testing.T, doc, start string) string {
	t.Helper()
	i := strings.Index(doc, start+"\n")
	require.GreaterOrEqual(t, i, 0, "no %q section", start)
	level := start[:strings.IndexByte(start, ' ')+1]
	rest := doc[i+len(start)+1:]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestReadmeNamesEveryToolFamily: README's "What works today" lists
// exactly the families the registry serves, and its "Not built yet"
// names none of them.
func TestReadmeNamesEveryToolFamily(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	today := section(t, string(b), "## What works today")
	built, notBuilt, ok := strings.Cut(today, "Not built yet:")
	require.True(t, ok, `"What works today" ends with a "Not built yet:" paragraph`)
	var named []string
	for _, m := range regexp.MustCompile("(?m)^  - `([a-z_]+)`(?: and `([a-z_]+)`)?:").FindAllStringSubmatch(built, -1) {
		named = append(named, m[1])
		if m[2] != "" {
			named = append(named, m[2])
		}
	}
	fams := servedFamilies()
	var served []string
	for f := range fams {
		served = append(served, f)
		require.NotContains(t, strings.ToLower(notBuilt), f, "README says family %s is not built, but the registry serves it", f)
	}
	slices.Sort(named)
	slices.Sort(served)
	require.Equal(t, served, named, "README's tool families and the registry's differ")
}

// TestToolsDocListsEveryFamilyAndTool: docs/tools.md's families table has
// one row per served family, holding exactly that family's tools.
func TestToolsDocListsEveryFamilyAndTool(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/tools.md")
	require.NoError(t, err)
	rows := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]+) \\|").FindAllStringSubmatch(section(t, string(b), "## The families"), -1) {
		for _, tool := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[2], -1) {
			rows[m[1]] = append(rows[m[1]], tool[1])
		}
	}
	fams := servedFamilies()
	for f, ts := range fams {
		slices.Sort(ts)
		got := rows[f]
		slices.Sort(got)
		require.Equal(t, ts, got, "docs/tools.md's row for family %s", f)
	}
	for f := range rows {
		require.Contains(t, fams, f, "docs/tools.md lists family %s, which the registry does not serve", f)
	}
}
