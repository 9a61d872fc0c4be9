package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/visorhq/visor/services/fault"
)

// Limits of the file tools.
const (
	MaxReadBytes    = 8 << 20   // a file read_file, search_text or file_edit opens
	MaxReplyBytes   = 256 << 10 // text one read_file answer carries
	DefaultMaxLines = 2000      // lines read_file returns without end_line
	MaxEditBytes    = 1 << 20   // new text of one file_edit
)

// Tree is a workspace's files on the worker that holds it, opened through
// os.Root so that no path, however it is spelt and whatever symbolic links
// it meets, reaches outside the folder. UID and GID, when not negative,
// own what the tools write (the container's user).
type Tree struct {
	Root     *os.Root
	UID, GID int
}

// OpenTree opens dir as a Tree.
func OpenTree(dir string, uid, gid int) (*Tree, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Tree{Root: r, UID: uid, GID: gid}, nil
}

// Close releases the tree's directory handle.
func (t *Tree) Close() error { return t.Root.Close() }

// FileError maps an os error on rel to the caller's answer.
func FileError(rel string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fault.New(fault.NotFound, "%s: no such file or directory in the workspace", rel)
	case errors.Is(err, fs.ErrExist):
		return fault.New(fault.Conflict, "%s already exists", rel)
	case strings.Contains(err.Error(), "path escapes from parent"):
		return escapeError(rel)
	case errors.Is(err, fs.ErrPermission):
		return fault.New(fault.Forbidden, "%s: permission denied", rel)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fault.New(fault.TooLarge, "%s: the workspace is full (its quota is used up); remove files to make room", rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory") {
		return fault.New(fault.Invalid, "%s: a part of the path is not a directory", rel)
	}
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "is a directory") {
		return fault.New(fault.Invalid, "%s is a directory", rel)
	}
	return err
}

// readText reads rel as UTF-8 text of at most MaxReadBytes.
func (t *Tree) readText(rel string) (string, error) {
	f, err := t.Root.Open(rel)
	if err != nil {
		return "", FileError(rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", FileError(rel, err)
	}
	if st.IsDir() {
		return "", fault.New(fault.Invalid, "%s is a directory; use list_dir", rel)
	}
	if st.Size() > MaxReadBytes {
		return "", fault.New(fault.TooLarge, "%s holds %d bytes; the file tools open files of at most %d bytes", rel, st.Size(), MaxReadBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return "", FileError(rel, err)
	}
	if !utf8.Valid(b) || strings.IndexByte(string(b), 0) >= 0 {
		return "", fault.New(fault.Invalid, "%s is not UTF-8 text", rel)
	}
	return string(b), nil
}

// writeText replaces rel with text atomically (a temporary file renamed
// over it), creating parent folders.
func (t *Tree) writeText(rel, text string) error {
	if dir := parentOf(rel); dir != "." {
		if err := t.Root.MkdirAll(dir, 0o755); err != nil {
			return FileError(rel, err)
		}
		t.own(dir)
	}
	tmp := rel + ".visor-tmp"
	if err := t.Root.WriteFile(tmp, []byte(text), 0o644); err != nil {
		_ = t.Root.Remove(tmp) // a write cut short by a full filesystem
		return FileError(rel, err)
	}
	t.own(tmp)
	if err := t.Root.Rename(tmp, rel); err != nil {
		_ = t.Root.Remove(tmp)
		return FileError(rel, err)
	}
	return nil
}

// own gives rel to the container's user (best effort: a worker that is not
// root writes as itself).
func (t *Tree) own(rel string) {
	if t.UID >= 0 && os.Geteuid() == 0 {
		_ = t.Root.Lchown(rel, t.UID, t.GID)
	}
}

func parentOf(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "."
	}
	return rel[:i]
}

// Usage walks the tree and returns its bytes and files.
func (t *Tree) Usage() (bytes int64, files int, err error) {
	err = fs.WalkDir(t.Root.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished while walking
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				bytes += info.Size()
			}
			files++
		}
		return nil
	})
	return bytes, files, err
}
