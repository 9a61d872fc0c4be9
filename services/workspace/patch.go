package workspace

import (
	"strconv"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// ApplyPatch applies the hunks of a unified diff (as Diff writes, or as
// git diff writes for one file) to text. Each hunk's context and removed
// lines must be found in text, at the stated line or, if the file moved,
// at the nearest place they match; a hunk that matches nowhere refuses
// the whole patch.
func ApplyPatch(text, patch string) (string, error) {
	lines := splitLines(text)
	hunks, err := parseHunks(patch)
	if err != nil {
		return "", err
	}
	offset := 0
	for n, h := range hunks {
		at := findHunk(lines, h.old, h.start-1+offset)
		if at < 0 {
			return "", fault.New(fault.Conflict, "hunk %d of the patch does not match the file (its context or removed lines changed)", n+1)
		}
		lines = append(lines[:at], append(append([]string{}, h.new...), lines[at+len(h.old):]...)...)
		offset += len(h.new) - len(h.old)
	}
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}

type hunk struct {
	start    int
	old, new []string
}

func parseHunks(patch string) ([]hunk, error) {
	var hs []hunk
	var cur *hunk
	for _, l := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			start, err := hunkStart(l)
			if err != nil {
				return nil, err
			}
			hs = append(hs, hunk{start: start})
			cur = &hs[len(hs)-1]
		case cur == nil || strings.HasPrefix(l, "\\"):
			// headers (diff, index, ---, +++) and "\ No newline" markers
		case strings.HasPrefix(l, "+"):
			cur.new = append(cur.new, l[1:])
		case strings.HasPrefix(l, "-"):
			cur.old = append(cur.old, l[1:])
		case strings.HasPrefix(l, " "), l == "":
			c := strings.TrimPrefix(l, " ")
			cur.old, cur.new = append(cur.old, c), append(cur.new, c)
		default:
			return nil, fault.New(fault.Invalid, "patch line %q is not a unified diff line", clip(l))
		}
	}
	if len(hs) == 0 {
		return nil, fault.New(fault.Invalid, "patch holds no hunk (want a unified diff with @@ lines)")
	}
	return hs, nil
}

// hunkStart reads the old start line of "@@ -l,n +l,n @@".
func hunkStart(l string) (int, error) {
	f := strings.Fields(l)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") {
		return 0, fault.New(fault.Invalid, "malformed hunk header %q", clip(l))
	}
	n, err := strconv.Atoi(strings.SplitN(f[1][1:], ",", 2)[0])
	if err != nil || n < 0 {
		return 0, fault.New(fault.Invalid, "malformed hunk header %q", clip(l))
	}
	return max(n, 1), nil
}

// findHunk returns where old occurs in lines nearest to want, or -1.
func findHunk(lines, old []string, want int) int {
	fits := func(at int) bool {
		if at < 0 || at+len(old) > len(lines) {
			return false
		}
		for i, l := range old {
			if lines[at+i] != l {
				return false
			}
		}
		return true
	}
	for d := 0; d <= len(lines); d++ {
		if fits(want - d) {
			return want - d
		}
		if fits(want + d) {
			return want + d
		}
	}
	return -1
}
