package computer

import (
	"regexp"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/injection"
)

// InjectionScanner is the Scanner workspace reads use: the platform's
// prompt-injection rules (services/injection), plus fence_escape for text
// that names this fence's own tag. It is a signal for the model and its
// operators, not a filter; content is returned either way, fenced as data.
type InjectionScanner struct{}

var fenceTagRE = regexp.MustCompile(`(?i)<\s*/?\s*computer_workspace_file`)

// Scan returns the flags of text, or nil.
func (InjectionScanner) Scan(text string) []string {
	var flags []string
	for _, r := range injection.Scan(text) {
		flags = append(flags, string(r))
	}
	if fenceTagRE.MatchString(text) && !slices.Contains(flags, string(injection.FenceEscape)) {
		flags = append(flags, string(injection.FenceEscape))
	}
	return flags
}

// Fence wraps workspace content as data. A closing tag inside the content is
// neutralized so the fence cannot be ended early.
func Fence(path string, content string, flags []string) string {
	safe := strings.ReplaceAll(content, "</computer_workspace_file", "<\\/computer_workspace_file")
	f := "none"
	if len(flags) > 0 {
		f = strings.Join(flags, ",")
	}
	return "<computer_workspace_file path=\"" + strings.ReplaceAll(path, `"`, "") + "\" injection_flags=\"" + f + "\">\n" +
		safe + "\n</computer_workspace_file>"
}
