// Package sandbox is the script sandbox: what a program run asks for, the
// limits every run gets, and what comes back. The container runner that
// enforces it lives in the docker subpackage; this package imports no
// infrastructure.
package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// The limits of every run. Memory and processes are per container; the
// timeouts are wall-clock.
const (
	DefaultTimeout = 30 * time.Second  // when the caller names none
	MaxTimeout     = 300 * time.Second // the most a caller may ask for
	HardCap        = 600 * time.Second // the whole run, start to removal, never longer

	Memory    = 2 << 30 // bytes of memory, and no swap beyond it
	Processes = 256     // processes and threads in the container
	NanoCPUs  = 1e9     // one CPU

	ReadCap  = 2 << 20 // bytes of output read from the container
	ReplyCap = 1 << 20 // bytes of output handed back

	// NoticeWait is the shortest queue wait a result's note mentions;
	// shorter waits are the ordinary hand-over to a worker.
	NoticeWait = 100 * time.Millisecond
)

// Language says how a script is run.
type Language string

// The languages a script may be written in.
const (
	Python Language = "python"
	Shell  Language = "sh"
)

// Command returns the command line that runs a script at path, and false for
// an unknown language. stderr is sent into stdout inside the container, so
// the one output keeps the order in which the script wrote.
func (l Language) Command(path string) ([]string, bool) {
	var run []string
	switch l {
	case Python:
		run = []string{"python3", "-I", path}
	case Shell:
		run = []string{"sh", path}
	default:
		return nil, false
	}
	return append([]string{"sh", "-c", `exec "$@" 2>&1`, "sandbox"}, run...), true
}

// FileName is the name the script gets inside /workspace.
func (l Language) FileName() string {
	if l == Python {
		return "main.py"
	}
	return "main.sh"
}

// Program is one run: whose it is, what image, and the script.
type Program struct {
	Tenant   uuid.UUID
	Employee uuid.UUID // the AI employee that asked, for its concurrency cap
	RunID    uuid.UUID
	Image    string
	Language Language
	Source   string
	Timeout  time.Duration // zero means DefaultTimeout
	// Started, when set, is called once the script is running (its
	// container or process started), so a caller that loses the worker
	// afterwards is told the script had started.
	Started func()
}

// MarkStarted tells p's caller that the script is running: every Runner
// calls it once the container or process has started.
func (p Program) MarkStarted() {
	if p.Started != nil {
		p.Started()
	}
}

// Result is what a finished run gives back. Output holds stdout and stderr
// together, in the order the script wrote them, at most ReplyCap bytes.
type Result struct {
	Output    string
	Cut       bool // the script wrote more than ReplyCap bytes
	ExitCode  int
	TimedOut  bool   // killed at its timeout (StopAtTimeout)
	Signal    string // the signal that stopped it at its timeout, "" otherwise
	OOMKilled bool   // killed for using more than its memory
	Duration  time.Duration
	Waited    time.Duration // time spent queued behind a concurrency cap
}

// The signal a run is stopped with at its timeout, and the exit code a
// shell reports for a process that signal killed (128 + 9).
const (
	TimeoutSignal   = "SIGKILL"
	TimeoutExitCode = 128 + 9
)

// StopAtTimeout records that the run was killed at its timeout: whatever
// the engine or the process reported, it did not exit on its own, so it
// never reads as exit code 0.
func (r *Result) StopAtTimeout() {
	r.TimedOut, r.Signal, r.ExitCode = true, TimeoutSignal, TimeoutExitCode
}

// Note is a sentence for the caller about how the run ended, or "" for a
// run that started at once and exited on its own with all its output.
func (r Result) Note() string {
	var note string
	switch {
	case r.TimedOut:
		note = fmt.Sprintf("The script was stopped at its timeout after %s: killed with %s (exit code %d).",
			r.Duration.Round(time.Millisecond), TimeoutSignal, TimeoutExitCode)
	case r.OOMKilled:
		note = "The script was stopped: it ran out of memory (2 GiB)."
	}
	if r.Cut {
		note += fmt.Sprintf(" Output was cut at %d bytes.", ReplyCap)
	}
	if r.Waited >= NoticeWait {
		note += fmt.Sprintf(" The run waited %s in a queue before it started.", r.Waited.Round(time.Millisecond))
	}
	if len(note) > 0 && note[0] == ' ' {
		note = note[1:]
	}
	return note
}

// Runner runs programs in sandboxes. Run returns a *fault.Error: Invalid for
// a bad program (unknown language, timeout over MaxTimeout), Unavailable
// (see Unavailable) when the sandbox cannot run, in which case nothing ran.
// A cancelled ctx removes the container and returns ctx's error.
type Runner interface {
	Run(ctx context.Context, p Program) (Result, error)
}

// Timeout returns the timeout a run gets for the seconds a caller asked for
// (0: the default).
func Timeout(seconds int) (time.Duration, error) {
	switch {
	case seconds == 0:
		return DefaultTimeout, nil
	case seconds < 0 || time.Duration(seconds)*time.Second > MaxTimeout:
		return 0, fault.New(fault.Invalid, "timeout_seconds must be between 1 and %d", int(MaxTimeout/time.Second))
	}
	return time.Duration(seconds) * time.Second, nil
}

// Unavailable is the error of a run that could not start: code names why
// (docker_unreachable, image_missing, no_worker, …) and the message ends
// with the fix for that cause, so a missing worker is not answered with
// advice about images.
func Unavailable(code, image, why string, cause error) error {
	return fault.Newf(fault.Unavailable, cause,
		"Script sandbox unavailable (%s): %s. The script was not run. %s", code, why, Fix(code, image))
}

// Fix is the operator's next step for an unavailable code.
func Fix(code, image string) string {
	switch code {
	case "image_missing":
		return "To make the image available on the sandbox worker's host: docker pull " + image + " (or build it there: docker build -t " + image + " deploy/sandbox)"
	case "image_not_allowed":
		return "Use an image on the platform's allow-list, or add " + image + " to VISOR_SANDBOX_IMAGES"
	case "no_worker":
		return "To start a sandbox worker: run `visor worker` with VISOR_SANDBOX_WORKER=true on a host with Docker and the image " + image +
			" (Compose: the sandbox-worker service; `visor dev` starts one itself when Docker and the image are present)"
	case "worker_lost":
		return "Call again; another sandbox worker, or this one restarted, takes the next run"
	case "worker_unreachable":
		return "Check that this server and the sandbox workers reach Redis"
	case "docker_unreachable":
		return "Start the Docker Engine on the sandbox worker's host, or point DOCKER_HOST at it"
	case "runtime_missing":
		return "Register the runtime in /etc/docker/daemon.json, or unset VISOR_SANDBOX_RUNTIME"
	}
	return "The sandbox worker's log has the engine's error"
}
