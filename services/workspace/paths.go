package workspace

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/visorhq/visor/services/fault"
)

// MountPath is where the workspace container sees the tree; a path the
// tools receive may start with it.
const MountPath = "/workspace"

// MaxPathBytes bounds a path argument.
const MaxPathBytes = 1024

// CleanPath turns a caller's path into a path relative to the tree's root
// ("." for the root). It refuses anything that names a place outside the
// tree: a ".." segment, an absolute path other than under MountPath, a NUL
// byte. Symbolic links are refused where they are followed (os.Root), not
// here.
func CleanPath(p string) (string, error) {
	if len(p) > MaxPathBytes || !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
		return "", fault.New(fault.Invalid, "path must be UTF-8 of at most %d bytes", MaxPathBytes)
	}
	if p == MountPath || strings.HasPrefix(p, MountPath+"/") {
		p = strings.TrimPrefix(strings.TrimPrefix(p, MountPath), "/")
	} else if strings.HasPrefix(p, "/") {
		return "", fault.New(fault.Invalid, "path %q is outside the workspace: use a path relative to %s", p, MountPath)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fault.New(fault.Invalid, "path %q leaves the workspace: '..' is not allowed", p)
		}
	}
	if p == "" {
		return ".", nil
	}
	return path.Clean(p), nil
}

// escapeError is the answer to a path that os.Root refused because it
// leaves the tree (through a symbolic link).
func escapeError(p string) error {
	return fault.New(fault.Forbidden, "path %q leads outside the workspace (through a symbolic link); refused", p)
}
