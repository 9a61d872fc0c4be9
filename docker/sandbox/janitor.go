package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/visorhq/visor/docker"
	domain "github.com/visorhq/visor/services/sandbox"
)

// Sweep removes what runs left behind: sandbox containers (by label) created
// more than olderThan ago, and run directories in TempDir untouched for more
// than domain.HardCap. No run outlives domain.HardCap, so a sweep with
// olderThan = domain.HardCap removes only leftovers of a worker that died;
// worker, when not empty, limits the containers to one worker's (a worker
// restarting under the same id sweeps its own with olderThan 0). Directories
// are shared by all workers on a host, so they are only ever swept by age.
// It returns how many containers and directories it removed.
func (r *Runner) Sweep(ctx context.Context, worker string, olderThan time.Duration) (containers, dirs int, err error) {
	containers, err = docker.Sweep(ctx, r.cli, docker.Sandbox, worker, olderThan, nil)
	dirs, derr := r.sweepDirs(time.Now().Add(-domain.HardCap))
	return containers, dirs, errors.Join(err, derr)
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
