package upstreams

import (
	"encoding/json"
	"strings"

	"github.com/visorhq/visor/services/injection"
)

// fenceTag is the tag an upstream's text is fenced in: whoever runs the
// server wrote it, so the model reads it as data, not as instructions.
const fenceTag = "upstream_result"

// fence fences every text block of res's content, naming the server, the
// tool and the injection-scan flags of all the result's text (its text
// blocks and structured content), and returns the flags. Other blocks
// (images, audio, resource links) and the structured content pass
// through intact. A text that holds the closing tag has it written
// "<\/upstream_result", so it cannot end the fence early.
func fence(server, tool string, res Result) (Result, []string, error) {
	var blocks []map[string]any
	if len(res.Content) > 0 {
		if err := json.Unmarshal(res.Content, &blocks); err != nil {
			return res, nil, err
		}
	}
	var all strings.Builder
	for _, b := range blocks {
		if t, ok := b["text"].(string); ok && b["type"] == "text" {
			all.WriteString(t)
			all.WriteByte('\n')
		}
	}
	all.Write(res.Structured)
	flags := []string{}
	for _, r := range injection.ScanAll(all.String()) {
		flags = append(flags, string(r))
	}
	closing := "</" + fenceTag
	if strings.Contains(asciiLower(all.String()), closing) && !contains(flags, string(injection.FenceEscape)) {
		flags = append(flags, string(injection.FenceEscape))
	}
	f := "none"
	if len(flags) > 0 {
		f = strings.Join(flags, ",")
	}
	open := "<" + fenceTag + ` server="` + server + `"`
	if tool != "" {
		open += ` tool="` + tool + `"`
	}
	open += ` injection_flags="` + f + `">` + "\n"
	for _, b := range blocks {
		if t, ok := b["text"].(string); ok && b["type"] == "text" {
			b["text"] = open + escapeClosing(t) + "\n" + closing + ">"
		}
	}
	if blocks != nil {
		raw, err := json.Marshal(blocks)
		if err != nil {
			return res, nil, err
		}
		res.Content = raw
	}
	return res, flags, nil
}

// escapeClosing writes every closing tag in t, in any case, as "<\/".
func escapeClosing(t string) string {
	low := asciiLower(t) // same byte offsets as t
	var b strings.Builder
	for {
		i := strings.Index(low, "</"+fenceTag)
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:i])
		b.WriteString(`<\/`)
		t, low = t[i+2:], low[i+2:]
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}
