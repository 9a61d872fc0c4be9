// Package workspacetest holds checks the workspace tools' tests share.
package workspacetest

import (
	"github.com/stretchr/testify/require"
)

// NoGenericOK fails when structured content holds a generic "ok" key at
// any depth: the workspace tools' answers carry domain fields instead
// (command_ok, exit_code, written, ...).
func NoGenericOK(t require.TestingT, v any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	switch x := v.(type) {
	case map[string]any:
		require.NotContains(t, x, "ok", "no generic ok in structured content")
		for _, e := range x {
			NoGenericOK(t, e)
		}
	case []any:
		for _, e := range x {
			NoGenericOK(t, e)
		}
	}
}
