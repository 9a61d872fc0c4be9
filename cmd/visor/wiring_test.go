package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWiringBuildsEachStoreOnceWithTheProcessContext reads cmd/visor's own
// wiring: every Postgres store constructor is called in one place (so a
// process builds each store once), and the only context.Background() is
// the one main derives the process context from (so every service gets the
// process context and its values).
func TestWiringBuildsEachStoreOnceWithTheProcessContext(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	ctor := regexp.MustCompile(`postgres\.New[A-Za-z]*Store\(`)
	seen := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src := string(b)
		for _, m := range ctor.FindAllString(src, -1) {
			require.NotContains(t, seen, m, "%s is called in %s and %s: build each store once, in openApp", m, seen[m], f)
			seen[m] = f
		}
		if f != "main.go" {
			require.NotContains(t, src, "context.Background()", "%s: pass the process context down instead", f)
		}
	}
	require.NotEmpty(t, seen)
}
