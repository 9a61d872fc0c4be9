package computer

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/visorhq/visor/services/fault"
)

// Workspace path rules.
const (
	MaxPathDepth = 4
	MaxPathBytes = 512
	// MaxSegmentBytes caps one segment (a file or folder name) at what
	// common file systems store (ext4, XFS, APFS: 255 bytes), so a name
	// the store accepts can be written to disk and exported.
	MaxSegmentBytes = 255
)

// CheckPath checks a workspace file path: relative, at most MaxPathDepth
// levels, each segment of at most MaxSegmentBytes made of letters, digits,
// inner spaces and -_.()（） only, and no segment that is "." or "..".
func CheckPath(p string) error {
	bad := func(why string) error {
		return fault.New(fault.Invalid, "path %s; paths are relative, at most %d levels, of letters, digits, inner spaces and -_.()（） only", why, MaxPathDepth)
	}
	if p == "" || len(p) > MaxPathBytes {
		return bad("must be 1-512 bytes")
	}
	segs := strings.Split(p, "/")
	if len(segs) > MaxPathDepth {
		return bad("is too deep")
	}
	for _, s := range segs {
		switch {
		case s == "":
			return bad("has an empty segment (leading, trailing or doubled /)")
		case s == "." || s == "..":
			return bad("may not contain . or .. segments")
		case s[0] == ' ' || s[len(s)-1] == ' ':
			return bad("has a segment that starts or ends with a space")
		case len(s) > MaxSegmentBytes:
			return bad(fmt.Sprintf("has a segment longer than %d bytes", MaxSegmentBytes))
		}
		for _, r := range s {
			if !pathRune(r) {
				return bad("has a character that is not allowed")
			}
		}
	}
	return nil
}

func pathRune(r rune) bool {
	switch {
	case unicode.IsLetter(r), unicode.IsDigit(r):
		return true
	case strings.ContainsRune(" -_.()（）", r):
		return true
	}
	return false
}
