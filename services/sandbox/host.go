package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/visorhq/visor/services/fault"
)

// HostRunner runs a script directly on the host, as the host process's
// user, with no isolation but its timeout and output caps. It exists only
// for a platform that switched host runs on and a tenant that asked for
// them when the sandbox is unavailable; every such run is audited.
type HostRunner struct {
	// TempDir holds each run's directory (default: the system's).
	TempDir string
}

var _ Runner = HostRunner{}

// Run runs p's script in a fresh directory with a minimal environment and
// kills its whole process group at the timeout or when ctx ends.
func (h HostRunner) Run(ctx context.Context, p Program) (Result, error) {
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Timeout < 0 || p.Timeout > MaxTimeout {
		return Result{}, fault.New(fault.Invalid, "timeout must be at most %s", MaxTimeout)
	}
	dir, err := os.MkdirTemp(h.TempDir, "visor-host-"+p.RunID.String()+"-")
	if err != nil {
		return Result{}, fault.Newf(fault.Unavailable, err, "the script's directory could not be prepared")
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, p.Language.FileName())
	cmdline, ok := p.Language.Command(file)
	if !ok {
		return Result{}, fault.New(fault.Invalid, "unknown language %q (use %q or %q)", p.Language, Python, Shell)
	}
	if err := os.WriteFile(file, []byte(p.Source), 0o400); err != nil {
		return Result{}, fault.Newf(fault.Unavailable, err, "the script could not be written")
	}
	out := &Capped{Limit: ReadCap}
	cmd := exec.Command(cmdline[0], cmdline[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fault.Newf(fault.Unavailable, err, "the script could not be started on the host")
	}
	p.MarkStarted()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(p.Timeout)
	defer timer.Stop()
	res := Result{}
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	select {
	case err = <-done:
	case <-timer.C:
		kill()
		err = <-done
		res.StopAtTimeout()
	case <-ctx.Done():
		kill()
		<-done
		return Result{}, ctx.Err()
	}
	kill() // whatever the script left running in its group
	res.Duration = time.Since(start)
	var exit *exec.ExitError
	if errors.As(err, &exit) && !res.TimedOut {
		res.ExitCode = exit.ExitCode()
	}
	res.Output, res.Cut = out.Reply()
	return res, nil
}

// Capped keeps the first Limit bytes written to it and counts the rest.
type Capped struct {
	Limit int
	buf   []byte
	total int
}

func (c *Capped) Write(p []byte) (int, error) {
	c.total += len(p)
	if room := c.Limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Reply returns at most ReplyCap bytes of the output and whether any was
// cut.
func (c *Capped) Reply() (string, bool) {
	if len(c.buf) <= ReplyCap && c.total == len(c.buf) {
		return string(c.buf), false
	}
	return string(c.buf[:min(len(c.buf), ReplyCap)]), true
}
