package knowledge

import (
	"sort"
	"strings"
	"unicode"
)

// MaxSegments bounds the segments a search looks for by trigrams.
const MaxSegments = 8

// particles split Japanese text where a space would split English: the
// case particles and the like, which are never part of a content word
// written in kanji or katakana.
var particles = []string{"について", "から", "まで", "より", "って", "の", "は", "が", "を", "に", "で", "と", "へ", "も", "や", "か"}

// Segments splits a query written without spaces (Japanese) into the
// content words to look for: the pieces between spaces, punctuation and
// particles, and the runs of kanji, katakana and Latin letters (content
// words are written in those; hiragana mostly glues them), whole and cut
// where the script changes. It keeps
// pieces of two or more characters that hold such a letter or a digit
// (hiragana alone, such as いつ, carries no topic), longest first.
func Segments(text string) []string {
	var pieces []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			pieces = append(pieces, cur.String())
			cur.Reset()
		}
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) {
			flush()
			continue
		}
		if p := particleAt(rs, i); p > 0 {
			flush()
			i += p - 1
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	for _, r := range rs {
		if unicode.Is(unicode.Hiragana, r) || unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) {
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	// And runs of one script: 請求書同期エラー holds 請求書同期 and エラー.
	last := 0
	for _, r := range rs {
		c := scriptOf(r)
		if c != last {
			flush()
		}
		if c > 0 {
			cur.WriteRune(r)
		}
		last = c
	}
	flush()
	sort.SliceStable(pieces, func(i, j int) bool { return len([]rune(pieces[i])) > len([]rune(pieces[j])) })
	var out []string
	seen := map[string]bool{}
	for _, p := range pieces {
		if len([]rune(p)) < 2 || !contentful(p) || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		if len(out) == MaxSegments {
			break
		}
	}
	return out
}

// scriptOf classes a character for the runs of one script: 1 kanji, 2
// katakana, 3 Latin letters and digits, 0 anything else.
func scriptOf(r rune) int {
	switch {
	case unicode.Is(unicode.Han, r):
		return 1
	case unicode.Is(unicode.Katakana, r) || r == 'ー':
		return 2
	case r < 0x2E80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
		return 3
	}
	return 0
}

// particleAt returns the length of the particle at rs[i], or 0. A
// particle is only cut between two characters that are not hiragana on
// both sides, or at the end of the text, so that hiragana words keep
// their letters.
func particleAt(rs []rune, i int) int {
	for _, p := range particles {
		pr := []rune(p)
		if i+len(pr) > len(rs) || string(rs[i:i+len(pr)]) != p {
			continue
		}
		if i > 0 && unicode.Is(unicode.Hiragana, rs[i-1]) {
			continue
		}
		return len(pr)
	}
	return 0
}

func contentful(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) || unicode.Is(unicode.Katakana, r) || unicode.IsLetter(r) && r < 0x2E80 || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}
