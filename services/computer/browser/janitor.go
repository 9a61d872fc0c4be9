package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/visorhq/visor/services/computer"
)

// Sweep removes session containers and networks (by label) created more
// than olderThan ago, and workspace copies in TempDir untouched for more
// than computer.SessionLifetime. worker, when not empty, limits it to one
// worker's. No session outlives computer.SessionLifetime, so a sweep of
// every worker with that age removes only what a dead worker left; a worker
// starting under its own id sweeps its own with olderThan 0.
func (m *Manager) Sweep(ctx context.Context, worker string, olderThan time.Duration) (removed int, err error) {
	args := filters.NewArgs(filters.Arg("label", LabelOwner+"=1"))
	if worker != "" {
		args.Add("label", LabelWorker+"="+worker)
	}
	list, err := m.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return 0, fmt.Errorf("list session containers: %w", err)
	}
	cutoff := time.Now().Add(-olderThan)
	var errs []error
	for _, c := range list {
		if time.Unix(c.Created, 0).After(cutoff) || m.holds(c.Labels[LabelSession]) {
			continue
		}
		if err := m.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isGone(err) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	nets, err := m.cli.NetworkList(ctx, network.ListOptions{Filters: args})
	if err != nil {
		return removed, errors.Join(append(errs, err)...)
	}
	for _, n := range nets {
		if n.Created.After(cutoff) || m.holds(n.Labels[LabelSession]) {
			continue
		}
		if err := m.cli.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, m.sweepDirs(time.Now().Add(-olderThan)))
	return removed, errors.Join(errs...)
}

func (m *Manager) holds(session string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.sessions {
		if id.String() == session {
			return true
		}
	}
	return false
}

func (m *Manager) sweepDirs(cutoff time.Time) error {
	entries, err := os.ReadDir(m.cfg.TempDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "visor-computer-") {
			continue
		}
		if info, err := e.Info(); err != nil || info.ModTime().After(cutoff) {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(m.cfg.TempDir, e.Name())))
	}
	return errors.Join(errs...)
}

// isGone reports an error that means the container no longer exists or is
// already being removed.
func isGone(err error) bool {
	return cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// ReapIdle stops the sessions no action touched for the idle timeout and
// returns how many it stopped.
func (m *Manager) ReapIdle(ctx context.Context) int {
	cutoff := time.Now().Add(-m.cfg.IdleTimeout)
	m.mu.Lock()
	var idle []*session
	for _, s := range m.sessions {
		if s.mu.TryLock() {
			if s.lastUsed.Before(cutoff) {
				idle = append(idle, s)
			}
			s.mu.Unlock()
		}
	}
	m.mu.Unlock()
	for _, s := range idle {
		if err := m.remove(ctx, s.spec.Session); err != nil {
			m.log.Warn("stop an idle session", "session", s.spec.Session, "err", err)
		}
	}
	return len(idle)
}

// Janitor is the worker's housekeeping as a background service: at Start
// its own leftovers from an earlier life, then every Period idle sessions,
// and the leftovers of dead workers (older than the session lifetime).
type Janitor struct {
	M      *Manager
	Period time.Duration

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

// Start sweeps this worker's leftovers and starts the periodic sweep.
func (j *Janitor) Start(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stop != nil {
		return errors.New("browser janitor: already started")
	}
	if _, err := j.M.Sweep(ctx, j.M.cfg.WorkerID, 0); err != nil {
		j.M.log.Warn("sweep this worker's leftover sessions", "err", err)
	}
	if j.Period == 0 {
		j.Period = 30 * time.Second
	}
	j.stop, j.done = make(chan struct{}), make(chan struct{})
	go j.loop(context.WithoutCancel(ctx), j.stop, j.done)
	return nil
}

func (j *Janitor) loop(ctx context.Context, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(j.Period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			j.M.ReapIdle(ctx)
			if _, err := j.M.Sweep(ctx, "", computer.SessionLifetime+time.Minute); err != nil {
				j.M.log.Warn("sweep dead workers' sessions", "err", err)
			}
		}
	}
}

// Stop ends the periodic sweep and stops every session this worker holds;
// safe to call twice.
func (j *Janitor) Stop() {
	j.mu.Lock()
	stop, done := j.stop, j.done
	j.stop = nil
	j.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	if err := j.M.Close(context.Background()); err != nil {
		j.M.log.Warn("stop sessions at shutdown", "err", err)
	}
}
