package workspace

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// Pack writes the tree under root as a tar.gz stream to w: regular files,
// folders and symbolic links (kept as links, never followed). It returns
// the bytes and files packed.
func Pack(root *os.Root, w io.Writer) (bytes int64, files int, err error) {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil // vanished while walking
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		link := ""
		if d.Type()&fs.ModeSymlink != 0 {
			if link, err = root.Readlink(p); err != nil {
				return nil
			}
		} else if !d.IsDir() && !d.Type().IsRegular() {
			return nil // sockets, pipes, devices
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = p, 0, 0, "", ""
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		n, err := copyFile(root, p, tw, hdr.Size)
		bytes += n
		files++
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	return bytes, files, err
}

func copyFile(root *os.Root, p string, w io.Writer, size int64) (int64, error) {
	f, err := root.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err == nil && n < size { // shrank while packing: pad to the header's size
		_, err = w.Write(make([]byte, size-n))
	}
	return size, err
}

// ErrSnapshotTooLarge is an unpack that passed its byte limit.
var ErrSnapshotTooLarge = fault.New(fault.TooLarge, "the snapshot holds more than the workspace may")

// Unpack extracts a tar.gz stream from Pack into root, which should be
// empty, writing at most limit bytes of file content. Every entry goes
// through root, so no name or link in the archive can place a file
// outside it. uid and gid, when not negative, own what is written.
func Unpack(r io.Reader, root *os.Root, limit int64, uid, gid int) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	tr := tar.NewReader(gz)
	var written int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if _, err := CleanPath(name); err != nil || name == "" || strings.HasPrefix(name, "/") {
			return fmt.Errorf("snapshot: entry %q leaves the tree", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(name, 0o755)
		case tar.TypeSymlink:
			err = root.Symlink(hdr.Linkname, name)
		case tar.TypeReg:
			if written += hdr.Size; written > limit {
				return ErrSnapshotTooLarge
			}
			err = writeEntry(root, name, tr, hdr.FileInfo().Mode().Perm())
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("snapshot: %s: %w", name, err)
		}
		if uid >= 0 && os.Geteuid() == 0 {
			_ = root.Lchown(name, uid, gid)
		}
	}
}

func writeEntry(root *os.Root, name string, r io.Reader, perm fs.FileMode) error {
	if dir := parentOf(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}
