package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// than olderThan ago, and workspace copies untouched for as long. worker,
// when not empty, limits it to one worker's. No session outlives
// computer.SessionLifetime, so a sweep of every worker with that age
// removes only what a dead worker left; a worker starting under its own id
// sweeps its own with olderThan 0.
func (m *Manager) Sweep(ctx context.Context, worker string, olderThan time.Duration) (removed int, err error) {
	removed, err = m.sweepDocker(ctx, worker, olderThan)
	return removed, errors.Join(err, m.sweepDirs(worker, time.Now().Add(-olderThan)))
}

func (m *Manager) sweepDocker(ctx context.Context, worker string, olderThan time.Duration) (removed int, err error) {
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
	return removed, errors.Join(errs...)
}

// dirPrefix names the workspace copies of one worker's sessions; "" is
// every worker's.
func (m *Manager) dirPrefix(worker string) string {
	if worker == "" {
		return "visor-computer-"
	}
	sum := sha256.Sum256([]byte(worker))
	return "visor-computer-" + hex.EncodeToString(sum[:6]) + "-"
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

func (m *Manager) sweepDirs(worker string, cutoff time.Time) error {
	entries, err := os.ReadDir(m.cfg.TempDir)
	if err != nil {
		return err
	}
	m.mu.Lock()
	held := map[string]bool{}
	for _, s := range m.sessions {
		held[filepath.Base(s.dir)] = true
	}
	m.mu.Unlock()
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), m.dirPrefix(worker)) || held[e.Name()] {
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
// the sessions of workers that stopped answering (when Alive is set), and
// the leftovers of dead workers (older than the session lifetime).
type Janitor struct {
	M      *Manager
	Period time.Duration
	// Alive reports whether a worker still answers on the worker plane
	// (its heartbeat). When set, a sweep that finds another worker's
	// containers on this Docker Engine and that worker not alive twice in
	// a row removes them, and calls Dead.
	Alive func(ctx context.Context, worker string) (bool, error)
	// Known reports whether a worker ever held a session of this
	// deployment; a worker it does not know (another deployment, or a test,
	// on the same Docker Engine) is never judged. Required with Alive.
	Known func(ctx context.Context, worker string) (bool, error)
	// Dead is told of each dead worker whose containers were removed, and
	// of this worker's own id at Start (an earlier life's sessions are
	// gone), to report their sessions lost; optional.
	Dead func(ctx context.Context, worker string)

	reap     sync.Mutex
	suspects map[string]bool // workers found not alive by the last sweep

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
	if j.Dead != nil {
		j.Dead(ctx, j.M.cfg.WorkerID) // what an earlier life of this worker held is gone
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
			j.reapDead(ctx)
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

// Workers lists the workers that made the session containers on this
// Docker Engine, other than this one.
func (m *Manager) Workers(ctx context.Context) ([]string, error) {
	list, err := m.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelOwner+"=1"))})
	if err != nil {
		return nil, fmt.Errorf("list session containers: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range list {
		if w := c.Labels[LabelWorker]; w != "" && w != m.cfg.WorkerID && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out, nil
}

// ReapDead runs one sweep of dead workers' sessions now (the loop runs it
// every Period): a worker found not alive by this sweep and the one
// before loses its containers, networks and sessions.
func (j *Janitor) ReapDead(ctx context.Context) { j.reapDead(ctx) }

func (j *Janitor) reapDead(ctx context.Context) {
	if j.Alive == nil || j.Known == nil {
		return
	}
	j.reap.Lock()
	defer j.reap.Unlock()
	workers, err := j.M.Workers(ctx)
	if err != nil {
		j.M.log.Warn("list other workers' sessions", "err", err)
		return
	}
	suspects := map[string]bool{}
	for _, w := range workers {
		if known, err := j.Known(ctx, w); err != nil || !known {
			continue
		}
		alive, err := j.Alive(ctx, w)
		if err != nil || alive {
			continue // an unreachable plane is not a dead worker
		}
		if !j.suspects[w] {
			suspects[w] = true // dead on the next sweep too: then it is gone
			continue
		}
		n, err := j.M.Sweep(ctx, w, 0) // this host's copies of its workspaces too
		if err != nil {
			j.M.log.Warn("remove a dead worker's sessions", "worker", w, "err", err)
		}
		j.M.log.Info("removed the sessions of a worker that stopped answering", "worker", w, "containers", n)
		if j.Dead != nil {
			j.Dead(ctx, w)
		}
	}
	j.suspects = suspects
}
