package ui_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/sandbox"
	ui "github.com/visorhq/visor/web/ui"
)

// langEnRE matches an element marked as English (a service's own detail,
// shown after its translated line); nested elements are not expected.
var langEnRE = regexp.MustCompile(`(?s)<(\w+)[^>]*\blang="en"[^>]*>.*?</\w+>`)

// requireNoServiceEnglish fails when a Japanese page shows one of the
// services' English sentences outside an element marked lang="en".
func requireNoServiceEnglish(t *testing.T, body string, sentences ...string) {
	t.Helper()
	outside := langEnRE.ReplaceAllString(body, "")
	for _, s := range sentences {
		require.NotContains(t, outside, s, "the page shows the service's English %q without a catalog line", s)
	}
}

// serviceSentences are the English end reasons and run failures the
// services produce, which pages must translate.
func serviceSentences() []string {
	var out []string
	for _, c := range computer.EndReasons {
		if c != computer.EndOther {
			out = append(out, computer.EndReasonText(c))
		}
	}
	return append(out, "Script sandbox unavailable", "no sandbox worker is running", "stopped answering")
}

// TestServiceTextHasCatalogLines: every end-reason and unavailable-run code
// has a message, and the stored English of older rows maps to its code.
func TestServiceTextHasCatalogLines(t *testing.T) {
	t.Parallel()
	cat, err := ui.LoadCatalog()
	require.NoError(t, err)
	for _, c := range computer.EndReasons {
		_, ok := cat.Message(ui.English, "computer.end."+c)
		require.True(t, ok, "end reason %s", c)
		require.Equal(t, c, computer.EndReasonCode(c))
		if c != computer.EndOther {
			require.Equal(t, c, computer.EndReasonCode(computer.EndReasonText(c)), "a row stored in English before codes reads as %s", c)
		}
	}
	require.Equal(t, computer.EndOther, computer.EndReasonCode("something new"))
	require.Equal(t, "", computer.EndReasonCode(""))
	for _, c := range sandbox.UnavailableCodes {
		_, ok := cat.Message(ui.English, "sandbox.reason."+c)
		require.True(t, ok, "unavailable code %s", c)
		if c != "other" {
			r := sandbox.Run{State: sandbox.RunUnavailable, Detail: fault.Message(sandbox.Unavailable(c, "img", "why", nil))}
			require.Equal(t, c, r.Reason(), r.Detail)
		}
	}
	require.Equal(t, "other", sandbox.Run{State: sandbox.RunUnavailable, Detail: "anything"}.Reason())
	require.Equal(t, "", sandbox.Run{State: sandbox.RunFailed, Detail: "x"}.Reason())
	require.True(t, strings.HasPrefix(computer.EndReasonText(computer.EndIdle), "idle for more than "))
}

// serviceFieldRE matches a template printing, as it is, a field that holds
// a service's English text.
var serviceFieldRE = regexp.MustCompile(`{{-?\s*\$?\w*\.(EndReason|Detail|ErrorDetail|EditDetail|Message)\s*-?}}`)

// TestTemplatesPrintServiceTextOnlyAsEnglish: a template shows a field
// holding a service's English text only inside an element marked
// lang="en" (after a catalog line); otherwise it passes a code to the
// catalog.
func TestTemplatesPrintServiceTextOnlyAsEnglish(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("templates/*.html")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src := string(b)
		for _, loc := range serviceFieldRE.FindAllStringIndex(src, -1) {
			require.True(t, strings.HasSuffix(src[:loc[0]], `lang="en">`),
				"%s prints %s outside an element marked lang=\"en\"; show a catalog line for it", f, src[loc[0]:loc[1]])
		}
	}
}
