package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/visorhq/visor/docker"
	domain "github.com/visorhq/visor/services/sandbox"
)

// removeWithin bounds the force-removal of a container once its run is
// over; engineOp bounds a create or a start, which a cancel does not cut
// short.
const (
	removeWithin = 5 * time.Second
	engineOp     = 30 * time.Second
)

// Run runs p in a fresh container and removes it, and the script's
// directory, before returning. See domain.Runner for the error contract.
func (r *Runner) Run(ctx context.Context, p domain.Program) (domain.Result, error) {
	if p.Timeout == 0 {
		p.Timeout = domain.DefaultTimeout
	}
	if err := r.check(ctx, p); err != nil {
		return domain.Result{}, err
	}
	var waited time.Duration
	if r.cfg.Gate != nil {
		release, w, err := r.cfg.Gate.Acquire(ctx, p.Tenant, p.Employee)
		if err != nil {
			return domain.Result{}, err
		}
		defer release()
		waited = w
	}
	res, err := r.runIn(ctx, p)
	res.Waited = waited
	return res, err
}

// runIn runs p once it may start: its directory, its container, its run.
func (r *Runner) runIn(ctx context.Context, p domain.Program) (domain.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, domain.HardCap)
	defer cancel()

	dir, err := r.workspace(p)
	if err != nil {
		return domain.Result{}, domain.Unavailable("workspace", p.Image, "the script's directory could not be prepared", err)
	}
	defer os.RemoveAll(dir)

	// A create abandoned by a cancel can still finish in the engine after
	// a removal by name was tried, so the create itself is not cancelled:
	// its id is known, and the deferred removal finds the container.
	opCtx, opCancel := context.WithTimeout(context.WithoutCancel(ctx), engineOp)
	created, err := r.cli.ContainerCreate(opCtx, r.containerConfig(p), r.hostConfig(dir), nil, nil, "visor-sandbox-"+p.RunID.String())
	opCancel()
	if err != nil {
		return domain.Result{}, domain.Unavailable("create_failed", p.Image, "the container could not be created", err)
	}
	defer r.remove(created.ID)
	if ctx.Err() != nil {
		return domain.Result{}, ctx.Err()
	}
	return r.run(ctx, created.ID, p)
}

// run attaches to, starts and waits for a created container.
func (r *Runner) run(ctx context.Context, id string, p domain.Program) (domain.Result, error) {
	attached, err := r.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return domain.Result{}, r.failed(ctx, p, "attach_failed", err)
	}
	defer attached.Close()
	out := &capped{limit: domain.ReadCap}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(out, out, attached.Reader)
	}()

	waited, waitErr := r.cli.ContainerWait(ctx, id, container.WaitConditionNextExit)
	start := time.Now()
	// Like the create, the start is not abandoned half way: a removal that
	// overtook it could find the container busy starting.
	opCtx, opCancel := context.WithTimeout(context.WithoutCancel(ctx), engineOp)
	err = r.cli.ContainerStart(opCtx, id, container.StartOptions{})
	opCancel()
	if err != nil {
		return domain.Result{}, r.failed(ctx, p, "start_failed", err)
	}
	p.MarkStarted()
	timer := time.NewTimer(p.Timeout)
	defer timer.Stop()

	res := domain.Result{}
	select {
	case w := <-waited:
		res.ExitCode = int(w.StatusCode)
	case err := <-waitErr:
		return domain.Result{}, r.failed(ctx, p, "wait_failed", err)
	case <-timer.C:
		res.StopAtTimeout()
		r.remove(id)
	case <-ctx.Done():
		r.remove(id)
		return domain.Result{}, ctx.Err()
	}
	res.Duration = time.Since(start)
	r.drain(attached.Close, copied)
	if !res.TimedOut {
		res.OOMKilled = r.oomKilled(ctx, id, res.ExitCode)
	}
	res.Output, res.Cut = out.reply()
	return res, nil
}

// oomKilled reports whether the engine says the container was killed for
// memory. The engine learns of an OOM kill from an event of its own that
// can come just after the exit, so a run killed by SIGKILL (exit 137) is
// asked about again for up to a second before it counts as not.
func (r *Runner) oomKilled(ctx context.Context, id string, exitCode int) bool {
	deadline := time.Now().Add(time.Second)
	for {
		st, err := r.cli.ContainerInspect(ctx, id)
		if err != nil || st.State == nil {
			return false
		}
		if st.State.OOMKilled || exitCode != 137 || time.Now().After(deadline) {
			return st.State.OOMKilled
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// drain waits briefly for the output copy to finish after the container
// stopped, then closes the stream so the copy cannot outlive the run.
func (r *Runner) drain(closeStream func(), copied <-chan struct{}) {
	select {
	case <-copied:
	case <-time.After(time.Second):
		closeStream()
		<-copied
	}
}

// failed turns an engine error during a run into the caller's error.
func (r *Runner) failed(ctx context.Context, p domain.Program, code string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return domain.Unavailable(code, p.Image, "the Docker Engine failed during the run", err)
}

// remove force-removes a container, whatever the state of the run's
// context, and logs a failure (the janitor removes what is left).
func (r *Runner) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), removeWithin)
	defer cancel()
	err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !docker.IsGone(err) {
		r.log.Warn("sandbox: remove container", "container", id, "err", fmt.Errorf("%w: %w", errRemove, err))
	}
}

// workspace makes the run's private directory (0700, like every
// os.MkdirTemp directory) holding only the script, owned by the container's
// user. The container sees it read-only.
func (r *Runner) workspace(p domain.Program) (string, error) {
	dir, err := os.MkdirTemp(r.cfg.TempDir, "visor-sandbox-"+p.RunID.String()+"-")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, p.Language.FileName())
	if err := os.WriteFile(file, []byte(p.Source), 0o400); err != nil {
		return dir, errors.Join(err, os.RemoveAll(dir))
	}
	uid, gid := hostUser()
	if os.Geteuid() == 0 {
		for _, f := range []string{dir, file} {
			if err := os.Chown(f, uid, gid); err != nil {
				return dir, errors.Join(err, os.RemoveAll(dir))
			}
		}
	}
	return dir, nil
}

// hostUser is the user scripts run as: the host's own user, or 1000:1000
// when the host process is root.
func hostUser() (uid, gid int) {
	uid, gid = os.Getuid(), os.Getgid()
	if uid == 0 {
		return 1000, 1000
	}
	return uid, gid
}

func (r *Runner) containerConfig(p domain.Program) *container.Config {
	uid, gid := hostUser()
	cmd, _ := p.Language.Command("/workspace/" + p.Language.FileName())
	return &container.Config{
		Image:           p.Image,
		Cmd:             cmd,
		Entrypoint:      []string{},
		User:            strconv.Itoa(uid) + ":" + strconv.Itoa(gid),
		WorkingDir:      "/workspace",
		Env:             []string{"HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"},
		NetworkDisabled: true,
		AttachStdout:    true,
		AttachStderr:    true,
		Labels:          docker.Labels(docker.Sandbox, r.cfg.WorkerID, p.Tenant.String(), p.RunID.String()),
	}
}

func (r *Runner) hostConfig(dir string) *container.HostConfig {
	pids := int64(domain.Processes)
	return &container.HostConfig{
		Runtime:        r.cfg.Runtime,
		NetworkMode:    "none",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		LogConfig:      container.LogConfig{Type: "none"},
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,noexec,size=64m"},
		Mounts: []mount.Mount{{
			Type: mount.TypeBind, Source: dir, Target: "/workspace", ReadOnly: true,
		}},
		Resources: container.Resources{
			Memory:     r.cfg.Memory,
			MemorySwap: r.cfg.Memory,
			PidsLimit:  &pids,
			NanoCPUs:   domain.NanoCPUs,
		},
	}
}

// capped keeps the first limit bytes written to it and counts the rest.
type capped struct {
	limit int
	buf   []byte
	total int
}

func (c *capped) Write(p []byte) (int, error) {
	c.total += len(p)
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// reply returns at most ReplyCap bytes of the output and whether any was cut.
func (c *capped) reply() (string, bool) {
	if len(c.buf) <= domain.ReplyCap && c.total == len(c.buf) {
		return string(c.buf), false
	}
	return string(c.buf[:min(len(c.buf), domain.ReplyCap)]), true
}

var _ io.Writer = (*capped)(nil)
