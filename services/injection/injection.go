// Package injection scans text another party wrote (an employee's question
// to an operator, text a browser read off a page) for signs of prompt
// injection: instructions aimed at the model that will later read the text
// rather than at the person it is addressed to. A scan never blocks or
// rewrites anything; it returns the ids of the rules that matched, so the
// caller can warn whoever is shown the text. docs/injection.md describes
// each rule.
package injection

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Rule is the id of one rule of the set.
type Rule string

// The rules. Their ids are stable: they are stored with what was scanned
// and shown to operators.
const (
	// Override: asks to ignore, forget or replace earlier instructions.
	Override Rule = "instruction_override"
	// Impersonation: poses as the system, the developer or another role
	// of the conversation, or as a chat template's role marker.
	Impersonation Rule = "role_impersonation"
	// Exfiltration: asks to reveal or send credentials, the system prompt,
	// or to call a tool or run a command on the reader's behalf.
	Exfiltration Rule = "exfiltration_ask"
	// Hidden: zero-width characters, bidirectional controls or Unicode tag
	// characters, which hide text from a person but not from a model.
	Hidden Rule = "hidden_text"
	// FenceEscape: markers that close or open a fenced data block, so the
	// text could leave the fence it is carried in.
	FenceEscape Rule = "fence_escape"
)

// Rules lists every rule in the order a scan reports them.
var Rules = []Rule{Override, Impersonation, Exfiltration, Hidden, FenceEscape}

// MaxScan bounds how much of a text is scanned, in bytes; the rest is
// ignored (callers cap what they accept well below it).
const MaxScan = 64 << 10

// Scan returns the ids of the rules text matches, in the order of Rules;
// an empty (non-nil) slice when none does.
func Scan(text string) []Rule {
	if len(text) > MaxScan {
		text = text[:MaxScan]
	}
	flags := []Rule{}
	hidden := hasHidden(text)
	plain := normalize(text)
	for _, r := range Rules {
		var hit bool
		switch r {
		case Hidden:
			hit = hidden
		default:
			hit = slices.ContainsFunc(patterns[r], func(re *regexp.Regexp) bool { return re.MatchString(plain) })
		}
		if hit {
			flags = append(flags, r)
		}
	}
	return flags
}

// Matched reports whether any rule matched.
func Matched(flags []Rule) bool { return len(flags) > 0 }

// hiddenRune reports a character that renders as nothing or reorders
// what a person sees: zero-width spaces and joiners, the word joiner and
// byte-order mark, bidirectional embeddings, overrides and isolates, and
// the tag characters.
func hiddenRune(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, // zero-width space/joiners, LRM, RLM
		r >= 0x202A && r <= 0x202E, // bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0xFEFF, r == 0x180E, r == 0x061C,
		r >= 0xE0000 && r <= 0xE007F: // tag characters
		return true
	}
	return false
}

func hasHidden(s string) bool { return strings.IndexFunc(s, hiddenRune) >= 0 }

// normalize folds what an attacker varies to slip past a pattern: NFKC
// (full-width letters and colons, compatibility forms), case, hidden
// characters (dropped, so "ig\u200bnore" still reads "ignore") and runs of
// white space within a line. Line breaks stay, for the rules that look at
// the start of a line.
func normalize(s string) string {
	s = norm.NFKC.String(s)
	s = strings.Map(func(r rune) rune {
		if hiddenRune(r) {
			return -1
		}
		if r == '\r' {
			return '\n'
		}
		return unicode.ToLower(r)
	}, s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// ScanAll runs the rules over all of text, in windows of MaxScan that
// overlap by a little, so a long text is scanned to its end; it returns
// each matched rule once, in the order first met.
func ScanAll(text string) []Rule {
	flags := []Rule{}
	const overlap = 512
	for start := 0; ; start += MaxScan - overlap {
		end := min(start+MaxScan, len(text))
		for _, r := range Scan(text[start:end]) {
			if !slices.Contains(flags, r) {
				flags = append(flags, r)
			}
		}
		if end == len(text) {
			return flags
		}
	}
}
