package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
)

// The worker plane's names for script runs: workers of Pool hold the
// Docker socket and run JobKind.
const (
	Pool    = "sandbox"
	JobKind = "sandbox.run"
)

// progressEvery is how often a running script's caller hears that it is
// still running.
const progressEvery = 2 * time.Second

// Job is the payload of a JobKind request. The tenant travels with the
// request itself.
type Job struct {
	Employee   uuid.UUID `json:"employee"`
	RunID      uuid.UUID `json:"run_id"`
	Image      string    `json:"image"`
	Language   Language  `json:"language"`
	Source     string    `json:"source"`
	TimeoutSec int       `json:"timeout_sec"`
	// OnHost asks that a script the sandbox cannot run be run on the
	// worker's host instead; the worker does so only when its own platform
	// switch allows it.
	OnHost bool `json:"on_host,omitempty"`
}

// Answer is what a JobKind job gives back.
type Answer struct {
	Output    string `json:"output"`
	Cut       bool   `json:"cut,omitempty"`
	ExitCode  int    `json:"exit_code"`
	TimedOut  bool   `json:"timed_out,omitempty"`
	Signal    string `json:"signal,omitempty"` // the signal that stopped it at its timeout
	OOMKilled bool   `json:"oom_killed,omitempty"`
	RunMS     int64  `json:"run_ms"`
	WaitedMS  int64  `json:"waited_ms"`
	Worker    string `json:"worker"`
	// OnHost reports a run on the worker's host, outside any sandbox.
	OnHost bool `json:"on_host,omitempty"`
	// Unavailable is the sandbox's refusal the host run replaced.
	Unavailable string `json:"unavailable,omitempty"`
}

// Result returns the answer as a Result.
func (a Answer) Result() Result {
	return Result{Output: a.Output, Cut: a.Cut, ExitCode: a.ExitCode, TimedOut: a.TimedOut, Signal: a.Signal, OOMKilled: a.OOMKilled,
		Duration: time.Duration(a.RunMS) * time.Millisecond, Waited: time.Duration(a.WaitedMS) * time.Millisecond}
}

// Handler runs JobKind jobs on a worker with runner. host, when non-nil,
// runs the script of a job that asked for it (OnHost) on the worker's
// host when the sandbox is unavailable; pass nil unless the platform
// allows host runs. The time a job spent queued, on the plane and behind
// the runner's caps, is reported as Waited.
func Handler(runner, host Runner) plane.Handler {
	return func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
		var job Job
		if err := json.Unmarshal(j.Payload, &job); err != nil {
			return nil, fault.New(fault.Invalid, "the script run could not be read: %v", err)
		}
		timeout, err := Timeout(job.TimeoutSec)
		if err != nil {
			return nil, err
		}
		// Clocks of caller and worker may differ a little: a negative or
		// tiny wait on the plane is the ordinary hand-over.
		onPlane := time.Since(j.Enqueued)
		if onPlane < NoticeWait {
			onPlane = 0
		}
		p := Program{Tenant: j.Tenant, Employee: job.Employee, RunID: job.RunID, Image: job.Image, Language: job.Language, Source: job.Source, Timeout: timeout,
			// A progress report is what tells the caller, should this
			// worker be lost, that the script had started.
			Started: func() { j.Report(plane.Progress{Total: timeout.Seconds(), Message: "the script has started"}) }}
		stop := report(ctx, j, timeout)
		res, err := runner.Run(ctx, p)
		stop()
		a := Answer{Worker: j.Worker}
		if err != nil && fault.Is(err, fault.Unavailable) && job.OnHost && host != nil && ctx.Err() == nil {
			a.OnHost, a.Unavailable = true, fault.Message(err)
			res, err = host.Run(ctx, p)
		}
		if err != nil {
			return nil, err
		}
		res.Waited += onPlane
		a.Output, a.Cut, a.ExitCode, a.TimedOut, a.Signal, a.OOMKilled = res.Output, res.Cut, res.ExitCode, res.TimedOut, res.Signal, res.OOMKilled
		a.RunMS, a.WaitedMS = res.Duration.Milliseconds(), res.Waited.Milliseconds()
		return json.Marshal(a)
	}
}

// report tells the caller every progressEvery that the run goes on, until
// the returned function is called.
func report(ctx context.Context, j plane.Job, timeout time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				el := time.Since(start)
				j.Report(plane.Progress{Progress: el.Seconds(), Total: timeout.Seconds(),
					Message: fmt.Sprintf("the script has been going for %s of its %s", el.Round(time.Second), timeout)})
			}
		}
	}()
	return func() { cancel(); <-done }
}
