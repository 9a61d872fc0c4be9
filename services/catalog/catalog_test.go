package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/sandbox"
	"github.com/visorhq/visor/services/tools"
)

// all is every family Visor serves, with no dependencies: declarations only.
func all() []catalog.Family {
	return []catalog.Family{(*agents.Service)(nil), (*grants.Service)(nil), (*board.Service)(nil), (*responsibilities.Service)(nil), (*sandbox.Tools)(nil), (*knowledge.Service)(nil)}
}

// TestDescriptionBudget enforces the 200-byte budget over the whole
// registry, and fails when an exemption in tools.ParamCapExemptions stops
// being needed.
func TestDescriptionBudget(t *testing.T) {
	reg := catalog.New(all()...)
	require.NotEmpty(t, reg.All())
	require.Empty(t, tools.CheckBudget(reg, tools.ParamCapExemptions))
}

func TestEveryToolDeclaresItsSurface(t *testing.T) {
	for _, tl := range catalog.New(all()...).All() {
		require.NotEmpty(t, tl.Description, tl.Name)
		require.NotEmpty(t, tl.Family, tl.Name)
		for _, p := range tl.Params {
			require.NotEmpty(t, p.Description, "%s.%s", tl.Name, p.Name)
		}
	}
}
