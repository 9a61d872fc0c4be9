package identity

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAuthorityPageShowsTheMatrix keeps the table in docs/authority.md the
// matrix the code enforces: change one, change the other.
func TestAuthorityPageShowsTheMatrix(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/authority.md")
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("| action | scope | owner | admin | operator | viewer |\n|---|---|---|---|---|---|\n")
	for _, a := range Actions {
		b.WriteString("| `" + string(a) + "` | `" + a.Scope() + "` |")
		for _, r := range Roles {
			if r.Allows(a) {
				b.WriteString(" ✓ |")
			} else {
				b.WriteString("  |")
			}
		}
		b.WriteString("\n")
	}
	require.Contains(t, string(page), b.String(), "docs/authority.md's matrix must read:\n%s", b.String())
}
