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

	"github.com/docker/docker/api/types/container"

	"github.com/visorhq/visor/docker"
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
	return docker.Sweep(ctx, m.cli, docker.Browser, worker, olderThan, m.holds)
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

	mu  sync.Mutex
	run *docker.Janitor
}

// Start sweeps this worker's leftovers, reports its earlier life's
// sessions lost, and starts the periodic sweep on the shared janitor. It
// runs once.
func (j *Janitor) Start(ctx context.Context) error {
	period := j.Period
	if period == 0 {
		period = 30 * time.Second
	}
	j.mu.Lock()
	if j.run == nil {
		j.run = &docker.Janitor{Every: period, First: j.first, Tick: j.tick, Last: j.last}
	}
	run := j.run
	j.mu.Unlock()
	return run.Start(ctx)
}

// Stop ends the periodic sweep and stops every session this worker holds;
// safe to call twice.
func (j *Janitor) Stop() {
	j.mu.Lock()
	run := j.run
	j.mu.Unlock()
	if run != nil {
		run.Stop()
	}
}

func (j *Janitor) first(ctx context.Context) {
	if _, err := j.M.Sweep(ctx, j.M.cfg.WorkerID, 0); err != nil {
		j.M.log.Warn("sweep this worker's leftover sessions", "err", err)
	}
	if j.Dead != nil {
		j.Dead(ctx, j.M.cfg.WorkerID) // what an earlier life of this worker held is gone
	}
}

func (j *Janitor) tick(ctx context.Context) {
	j.M.ReapIdle(ctx)
	j.reapDead(ctx)
	if _, err := j.M.Sweep(ctx, "", computer.SessionLifetime+time.Minute); err != nil {
		j.M.log.Warn("sweep dead workers' sessions", "err", err)
	}
}

func (j *Janitor) last() {
	if err := j.M.Close(context.Background()); err != nil {
		j.M.log.Warn("stop sessions at shutdown", "err", err)
	}
}

// Workers lists the workers that made the session containers on this
// Docker Engine, other than this one.
func (m *Manager) Workers(ctx context.Context) ([]string, error) {
	list, err := m.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: docker.Filter(docker.Browser, "")})
	if err != nil {
		return nil, fmt.Errorf("list session containers: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range list {
		if w := c.Labels[docker.LabelWorker]; w != "" && w != m.cfg.WorkerID && !seen[w] {
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
