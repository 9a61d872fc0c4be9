package ui_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/ui"
)

var verbRE = regexp.MustCompile(`%(\[\d+\])?[a-z]`)

// TestEveryMessageIsTranslated: both languages hold the same keys, none
// empty, and each translation takes the same arguments as the English.
func TestEveryMessageIsTranslated(t *testing.T) {
	t.Parallel()
	cat, err := ui.LoadCatalog()
	require.NoError(t, err)
	en, ja := cat.Keys(ui.English), cat.Keys(ui.Japanese)
	slices.Sort(en)
	slices.Sort(ja)
	for _, k := range en {
		require.Contains(t, ja, k, "message %q has no Japanese translation", k)
	}
	for _, k := range ja {
		require.Contains(t, en, k, "message %q is Japanese only", k)
	}
	for _, k := range en {
		for _, l := range ui.Langs {
			m, _ := cat.Message(l, k)
			require.NotEmpty(t, strings.TrimSpace(m), "message %q is empty in %s", k, l)
			for _, v := range verbRE.FindAllString(m, -1) {
				require.Regexp(t, `^%\[\d+\]`, v, "message %q in %s: number its arguments (%%[1]s) so translations can reorder them", k, l)
			}
		}
		me, _ := cat.Message(ui.English, k)
		mj, _ := cat.Message(ui.Japanese, k)
		ve, vj := verbRE.FindAllString(me, -1), verbRE.FindAllString(mj, -1)
		slices.Sort(ve)
		slices.Sort(vj)
		require.Equal(t, slices.Compact(ve), slices.Compact(vj), "message %q takes other arguments in Japanese", k)
	}
}

var (
	actionRE  = regexp.MustCompile(`(?s){{.*?}}`)
	tKeyRE    = regexp.MustCompile(`\.T "([^"]+)"`)
	tagRE     = regexp.MustCompile(`(?s)<[^>]*>`)
	styleRE   = regexp.MustCompile(`(?s)<style[^>]*>.*?</style>|<script[^>]*>.*?</script>`)
	attrRE    = regexp.MustCompile(`(?i)\b(title|placeholder|aria-label|alt|label)="([^"]*)"`)
	letterRE  = regexp.MustCompile(`\p{L}`)
	goKeyRE   = regexp.MustCompile(`"([a-z_]+\.[a-z_:.]+)"`)
	noticeRE  = regexp.MustCompile(`back\(c, v, [^\n]*, "([a-z_]+)"\)`)
	doctypeRE = regexp.MustCompile(`(?i)<!doctype html>`)
)

// TestTemplatesHoldNoLiteralText: every word a page shows comes from the
// catalog. Outside template actions, tags and style blocks a template may
// hold only punctuation, and its user-facing attributes no words; every
// key a template names exists.
func TestTemplatesHoldNoLiteralText(t *testing.T) {
	t.Parallel()
	cat, err := ui.LoadCatalog()
	require.NoError(t, err)
	files, err := filepath.Glob("templates/*.html")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src := string(b)
		for _, m := range tKeyRE.FindAllStringSubmatch(src, -1) {
			_, ok := cat.Message(ui.English, m[1])
			require.True(t, ok, "%s names message %q, which the catalog lacks", f, m[1])
		}
		bare := actionRE.ReplaceAllString(src, "")
		for _, m := range attrRE.FindAllStringSubmatch(bare, -1) {
			require.False(t, letterRE.MatchString(m[2]), "%s: attribute %s=%q is literal text; use the catalog", f, m[1], m[2])
		}
		text := tagRE.ReplaceAllString(styleRE.ReplaceAllString(doctypeRE.ReplaceAllString(bare, ""), ""), " ")
		if w := letterRE.FindStringIndex(text); w != nil {
			lo, hi := max(0, w[0]-30), min(len(text), w[1]+30)
			t.Errorf("%s holds literal text %q; put it in the catalog", f, strings.TrimSpace(text[lo:hi]))
		}
	}
}

// TestCodeNamesOnlyKnownMessages: the message keys the Go code passes to
// pages (titles, notices, the authorization server's errors) and the keys
// built from values (roles, agent states, scopes) all exist.
func TestCodeNamesOnlyKnownMessages(t *testing.T) {
	t.Parallel()
	cat, err := ui.LoadCatalog()
	require.NoError(t, err)
	has := func(k string) bool { _, ok := cat.Message(ui.English, k); return ok }
	n := 0
	for _, dir := range []string{".", "../oauth"} {
		require.NoError(t, fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() && p != "." || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				if d != nil && d.IsDir() && p != "." {
					return fs.SkipDir
				}
				return err
			}
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return err
			}
			for _, m := range goKeyRE.FindAllStringSubmatch(string(b), -1) {
				n++
				require.True(t, has(m[1]), "%s/%s names message %q, which the catalog lacks", dir, p, m[1])
			}
			for _, m := range noticeRE.FindAllStringSubmatch(string(b), -1) {
				require.True(t, has("done."+m[1]), "%s/%s shows notice %q, which the catalog lacks", dir, p, "done."+m[1])
			}
			return nil
		}))
	}
	require.Greater(t, n, 20, "the scan finds the code's message keys")
	for _, r := range identity.Roles {
		require.True(t, has("role."+string(r)), "role %s", r)
	}
	for _, s := range []identity.AgentStatus{identity.AgentActive, identity.AgentTrashed} {
		require.True(t, has("agent.status."+string(s)), "agent status %s", s)
	}
	for _, s := range identity.ToolScopes {
		require.True(t, has("scope."+s), "scope %s", s)
	}
}

// TestLanguageNegotiation: Accept-Language picks Japanese only when the
// reader prefers it.
func TestLanguageNegotiation(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]ui.Lang{"": ui.English, "ja": ui.Japanese, "ja-JP,ja;q=0.9,en;q=0.8": ui.Japanese,
		"en-US,en;q=0.9,ja;q=0.5": ui.English, "fr-FR": ui.English, "de,ja;q=0.1": ui.Japanese, "garbage;;q=x": ui.English} {
		require.Equal(t, want, ui.Negotiate(h), "%q", h)
	}
	require.Equal(t, "1,234,567", ui.English.FormatInt(1234567))
	require.Equal(t, "-1,000", ui.Japanese.FormatInt(-1000))
	require.Equal(t, "$1,234.05", ui.English.FormatCents(123405))
	require.Equal(t, "1,234.05 米ドル", ui.Japanese.FormatCents(123405))
}
