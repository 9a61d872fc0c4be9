package computer

import (
	"regexp"
	"strings"
)

// PatternScanner is a small built-in Scanner: it flags phrases that address
// a model rather than a reader. It is a signal for the model and its
// operators, not a filter; content is returned either way, fenced as data.
type PatternScanner struct{}

var injectionPatterns = []struct {
	flag string
	re   *regexp.Regexp
}{
	{"ignore_instructions", regexp.MustCompile(`(?i)\b(ignore|disregard|forget)\b.{0,40}\b(previous|prior|above|earlier|all)\b.{0,40}\b(instructions?|rules|prompts?)\b`)},
	{"role_override", regexp.MustCompile(`(?i)\b(you are now|act as|new instructions|system prompt)\b`)},
	{"tool_invocation", regexp.MustCompile(`(?i)\b(call|run|invoke|use) (the )?(tool|function) \w+`)},
	{"fence_escape", regexp.MustCompile(`(?i)</?\s*computer_workspace_file`)},
	{"secret_request", regexp.MustCompile(`(?i)\b(api[_ ]?key|password|credentials?|token)\b.{0,40}\b(send|post|reveal|share|paste)\b`)},
}

// Scan returns the flags of text, in a fixed order, or nil.
func (PatternScanner) Scan(text string) []string {
	var flags []string
	for _, p := range injectionPatterns {
		if p.re.MatchString(text) {
			flags = append(flags, p.flag)
		}
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
