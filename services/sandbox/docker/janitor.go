package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/visorhq/visor/services/sandbox"
)

// Sweep removes what runs left behind: sandbox containers (by label) created
// more than olderThan ago, and run directories in TempDir untouched for more
// than sandbox.HardCap. No run outlives sandbox.HardCap, so a sweep with
// olderThan = sandbox.HardCap removes only leftovers of a worker that died;
// worker, when not empty, limits the containers to one worker's (a worker
// restarting under the same id sweeps its own with olderThan 0). Directories
// are shared by all workers on a host, so they are only ever swept by age.
// It returns how many containers and directories it removed.
func (r *Runner) Sweep(ctx context.Context, worker string, olderThan time.Duration) (containers, dirs int, err error) {
	args := filters.NewArgs(filters.Arg("label", LabelOwner+"=1"))
	if worker != "" {
		args.Add("label", LabelWorker+"="+worker)
	}
	list, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return 0, 0, fmt.Errorf("list sandbox containers: %w", err)
	}
	cutoff := time.Now().Add(-olderThan)
	var errs []error
	for _, c := range list {
		if time.Unix(c.Created, 0).After(cutoff) {
			continue
		}
		err := r.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			containers++
		case !isGone(err):
			errs = append(errs, fmt.Errorf("remove %s: %w", c.ID, err))
		}
	}
	dirs, err = r.sweepDirs(time.Now().Add(-sandbox.HardCap))
	errs = append(errs, err)
	return containers, dirs, errors.Join(errs...)
}

// sweepDirs removes run directories last touched before cutoff.
func (r *Runner) sweepDirs(cutoff time.Time) (int, error) {
	entries, err := os.ReadDir(r.cfg.TempDir)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", r.cfg.TempDir, err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "visor-sandbox-") {
			continue
		}
		info, err := e.Info()
		if err != nil || info.ModTime().After(cutoff) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.cfg.TempDir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// isGone reports an error that means the container no longer exists or is
// already being removed.
func isGone(err error) bool {
	return cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}
