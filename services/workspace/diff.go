package workspace

import (
	"fmt"
	"strings"
)

// maxDiffBytes bounds a diff preview.
const maxDiffBytes = 64 << 10

// Diff returns a unified diff of old and new text for name, with three
// lines of context, cut at 64 KiB. Common leading and trailing lines are
// set aside first, so a local edit of a large file costs little; a middle
// too large to compare line by line is shown as removed and added whole.
func Diff(name, old, new string) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := middleOps(a[pre:len(a)-suf], b[pre:len(b)-suf])
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	ctxStart := max0(pre - 3)
	aEnd, bEnd := min(len(a), len(a)-suf+3), min(len(b), len(b)-suf+3)
	fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ctxStart+1, aEnd-ctxStart, ctxStart+1, bEnd-ctxStart)
	for _, l := range a[ctxStart:pre] {
		out.WriteString(" " + l + "\n")
	}
	for _, op := range ops {
		out.WriteString(op + "\n")
		if out.Len() > maxDiffBytes {
			out.WriteString("… (diff cut at 64 KiB)\n")
			return out.String()
		}
	}
	for _, l := range a[len(a)-suf : aEnd] {
		out.WriteString(" " + l + "\n")
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// middleOps diffs two line lists by longest common subsequence, or shows
// them removed and added whole when the table would be too large.
func middleOps(a, b []string) []string {
	var ops []string
	if len(a)*len(b) > 4_000_000 {
		for _, l := range a {
			ops = append(ops, "-"+l)
		}
		for _, l := range b {
			ops = append(ops, "+"+l)
		}
		return ops
	}
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, " "+a[i])
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, "-"+a[i])
			i++
		default:
			ops = append(ops, "+"+b[j])
			j++
		}
	}
	return ops
}
