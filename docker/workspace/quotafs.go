package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The filesystems a workspace's tree can live on (Config.FS).
const (
	// FSTmpfs mounts a tmpfs of the quota's size on each workspace's
	// files folder: a command that writes past the quota fails with
	// ENOSPC. The worker needs CAP_SYS_ADMIN (to mount).
	FSTmpfs = "tmpfs"
	// FSFolder keeps the tree in a plain folder: the quota bounds
	// file_edit only, and a command can write past it until the disk is
	// full. For a worker that cannot mount.
	FSFolder = "folder"
)

const page = 4096

// inodes bounds a workspace filesystem's files, so that a command making
// empty files (which take no pages) cannot spend the worker's memory on
// inodes: one per 4 KiB of quota, at least 4,096.
func inodes(size int64) int64 { return max(size/page, 4096) }

func roundPage(n int64) int64 { return (n + page - 1) / page * page }

// mountQuota mounts a tmpfs of size bytes on dir, owned by uid:gid.
func mountQuota(dir string, size int64, uid, gid int) error {
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755,uid=%d,gid=%d", roundPage(size), inodes(size), uid, gid)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the workspace filesystem on %s: %w", dir, err)
	}
	return nil
}

// resizeQuota sets the size of the tmpfs on dir to size bytes, or to
// what it already holds when that is more (a tmpfs cannot shrink below
// its use).
func resizeQuota(dir string, size int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	used := (int64(st.Blocks) - int64(st.Bfree)) * int64(st.Bsize)
	size = roundPage(max(size, used))
	opts := fmt.Sprintf("size=%d,nr_inodes=%d", size, max(inodes(size), int64(st.Files-st.Ffree)+1))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("resize the workspace filesystem on %s: %w", dir, err)
	}
	return nil
}

// unmountQuota detaches the filesystem on dir; a folder that is no mount
// point is left as it is.
func unmountQuota(dir string) error {
	err := syscall.Unmount(dir, syscall.MNT_DETACH)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// fsUse is the bytes used and free on the filesystem holding dir.
func fsUse(dir string) (used, free int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bs := int64(st.Bsize)
	return (int64(st.Blocks) - int64(st.Bfree)) * bs, int64(st.Bavail) * bs, nil
}

// probeMount checks at start that this worker can mount a workspace
// filesystem under base.
func probeMount(base string) error {
	dir, err := os.MkdirTemp(base, "visor-ws-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := mountQuota(dir, page, os.Getuid(), os.Getgid()); err != nil {
		return fmt.Errorf("%w (VISOR_WORKSPACE_FS=tmpfs needs CAP_SYS_ADMIN; see docs/workspace.md, or set VISOR_WORKSPACE_FS=folder to run without a filesystem quota)", err)
	}
	return unmountQuota(dir)
}

// filesDir is the folder of a held workspace's tree.
func filesDir(dir string) string { return filepath.Join(dir, "files") }
