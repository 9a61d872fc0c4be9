package knowledge

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/injection"
)

// Scan returns the injection-scan flags of text another party may have
// written, plus fence_escape when it names a knowledge fence's tag.
func Scan(text string) []string {
	flags := []string{}
	for _, r := range injection.Scan(text) {
		flags = append(flags, string(r))
	}
	if fenceTagRE.MatchString(text) && !slices.Contains(flags, string(injection.FenceEscape)) {
		flags = append(flags, string(injection.FenceEscape))
	}
	return flags
}

var fenceTagRE = regexp.MustCompile(`(?i)<\s*/?\s*(memory|wiki_page|handoff)\b`)

// Fence wraps text read back as data: tag with the attributes attrs (in
// order, name then value) and the injection flags, and a closing tag in
// the text neutralised so it cannot end the fence early.
func Fence(tag string, text string, flags []string, attrs ...string) string {
	var b strings.Builder
	b.WriteString("<" + tag)
	for i := 0; i+1 < len(attrs); i += 2 {
		fmt.Fprintf(&b, " %s=%q", attrs[i], attrs[i+1])
	}
	f := "none"
	if len(flags) > 0 {
		f = strings.Join(flags, ",")
	}
	fmt.Fprintf(&b, " injection_flags=%q>\n", f)
	b.WriteString(closeTagRE.ReplaceAllStringFunc(text, func(m string) string { return strings.Replace(m, "/", `\/`, 1) }))
	b.WriteString("\n</" + tag + ">")
	return b.String()
}

var closeTagRE = regexp.MustCompile(`(?i)<\s*/\s*(memory|wiki_page|handoff)`)
