package workspace

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// streamRedactor replaces the values of an employee's Skill variables in
// a session's output as it is written, so what a session keeps holds no
// value: a read whose window cuts through a value, or a command that
// writes one in pieces, cannot put it back together. The end of the
// output that could still become a value is held back until the next
// write shows whether it does (or the command ends).
type streamRedactor struct {
	r      *strings.Replacer
	values [][]byte
	pend   []byte
}

// newStreamRedactor redacts each value of names (value -> replacement);
// nil when there is none.
func newStreamRedactor(names map[string]string) *streamRedactor {
	if len(names) == 0 {
		return nil
	}
	sr := &streamRedactor{}
	for v := range names {
		sr.values = append(sr.values, []byte(v))
	}
	// The longest first, as Redactor does: a value inside another is not
	// replaced in it.
	slices.SortFunc(sr.values, func(a, b []byte) int { return cmp.Or(len(b)-len(a), bytes.Compare(a, b)) })
	args := make([]string, 0, 2*len(names))
	for _, v := range sr.values {
		args = append(args, string(v), names[string(v)])
	}
	sr.r = strings.NewReplacer(args...)
	return sr
}

// feed takes the next output and returns what can be kept, redacted;
// final flushes what was held back.
func (sr *streamRedactor) feed(p []byte, final bool) []byte {
	buf := append(sr.pend, p...)
	if final {
		sr.pend = nil
		return []byte(sr.r.Replace(string(buf)))
	}
	// No whole value may straddle the cut: it falls at or after the end
	// of the last one, and before the longest tail that begins a value.
	end := 0
	for _, v := range sr.values {
		if i := bytes.LastIndex(buf, v); i >= 0 && i+len(v) > end {
			end = i + len(v)
		}
	}
	hold := 0
	for _, v := range sr.values {
		for k := min(len(v)-1, len(buf)-end); k > hold; k-- {
			if bytes.HasSuffix(buf, v[:k]) {
				hold = k
				break
			}
		}
	}
	cut := len(buf) - hold
	sr.pend = append([]byte(nil), buf[cut:]...)
	return []byte(sr.r.Replace(string(buf[:cut])))
}
