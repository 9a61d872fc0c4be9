package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/plane"
	"github.com/visorhq/visor/services/tools"
)

// The audit events of execute_program besides the ordinary call.
const (
	EventUnavailable = "script_sandbox_unavailable" // the sandbox could not run; nothing ran
	EventBypassed    = "script_sandbox_bypassed"    // the script ran on a worker's host, unsandboxed
)

// MaxSource is the largest script execute_program accepts, in bytes.
const MaxSource = 256 << 10

// Tools declares execute_program (a catalog.Family) and runs it through
// the worker plane: serve never touches the Docker socket.
type Tools struct {
	// Plane reaches the workers of Pool.
	Plane plane.Caller
	// Images is the platform's allow-list; the first is the default for a
	// tenant that names none.
	Images []string
	// HostRuns is the platform switch that lets a tenant's
	// script_when_unavailable = "run_unsandboxed" take effect. Off by
	// default: tenants share workers.
	HostRuns bool
	// Log keeps the tenant's log of runs for the dashboard; nil keeps
	// none. Logger hears when the log cannot be written (the run goes on).
	Log    RunLog
	Logger *slog.Logger
}

func ptr[T any](v T) *T { return &v }

// Register declares execute_program.
func (t *Tools) Register(reg *tools.Registry) {
	reg.Register(tools.Tool{Name: "execute_program", Family: "sandbox", Scope: identity.ScopeToolsWrite, Handler: t.execute,
		Description: "Run a Python 3 or POSIX sh script in a locked-down container: no network, read-only /, 2 GiB, 256 processes, 1 CPU. Returns stdout and stderr as one output and the exit code.",
		Params: []tools.Param{
			{Name: "language", Type: "string", Required: true, Description: `"python" or "sh".`},
			{Name: "code", Type: "string", Required: true, Description: "The script, at most 256 KiB. Runs in /workspace (read-only); /tmp is a small writable tmpfs."},
			{Name: "timeout_seconds", Type: "integer", Description: "1-300, default 30. The script is killed when it runs out."},
		},
		Annotations: tools.Annotations{Title: "Execute program", Destructive: ptr(false), OpenWorld: ptr(false)}})
}

func (t *Tools) execute(ctx context.Context, c tools.Call) (*tools.Result, error) {
	job, err := t.job(c)
	if err != nil {
		return nil, err
	}
	end := t.logRun(ctx, c, job)
	a, err := t.run(ctx, c, job)
	end(a, err)
	if err != nil {
		return nil, err
	}
	return answer(a), nil
}

// run sends job to a sandbox worker and returns its answer.
func (t *Tools) run(ctx context.Context, c tools.Call, job Job) (Answer, error) {
	settings := c.Subject.Tenant.Settings
	job.OnHost = t.HostRuns && settings.ScriptWhenUnavailable == "run_unsandboxed"
	if !job.OnHost && !slices.Contains(t.Images, job.Image) {
		return Answer{}, unavailable(Unavailable("image_not_allowed", job.Image, "the image is not on the platform's allow-list", nil))
	}
	if t.Plane == nil {
		return Answer{}, unavailable(Unavailable("no_worker", job.Image, "this server cannot reach any sandbox worker", nil))
	}
	payload, err := json.Marshal(job)
	if err != nil {
		return Answer{}, fmt.Errorf("encode script run: %w", err)
	}
	raw, err := t.Plane.Call(ctx, plane.Request{Kind: JobKind, Pool: Pool, Tenant: c.Principal().TenantID, Payload: payload},
		func(p plane.Progress) { c.Report(p.Progress, p.Total, p.Message) })
	if err != nil {
		return Answer{}, t.failed(ctx, job.Image, err)
	}
	var a Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return Answer{}, fmt.Errorf("decode script result: %w", err)
	}
	return a, nil
}

// logRun records job as running in the run log and returns what records
// how it ended. A log that cannot be written never stops the run.
func (t *Tools) logRun(ctx context.Context, c tools.Call, job Job) func(Answer, error) {
	if t.Log == nil {
		return func(Answer, error) {}
	}
	ctx = context.WithoutCancel(ctx)
	p := c.Principal()
	r := Run{TenantID: p.TenantID, ID: job.RunID, Principal: p.ID(), Image: job.Image, Language: job.Language, StartedAt: time.Now()}
	if p.IsEmployee() {
		r.AgentID = p.AgentID
	}
	if err := t.Log.StartRun(ctx, r); err != nil {
		t.logger().WarnContext(ctx, "script run not logged", "tenant", p.TenantID, "run", job.RunID, "err", err)
		return func(Answer, error) {}
	}
	return func(a Answer, err error) {
		ended(&r, a, err)
		if err := t.Log.EndRun(ctx, r); err != nil {
			t.logger().WarnContext(ctx, "script run's end not logged", "tenant", p.TenantID, "run", job.RunID, "err", err)
		}
	}
}

// ended fills in how r ended: a's result, or why there is none.
func ended(r *Run, a Answer, err error) {
	now := time.Now()
	r.EndedAt = &now
	switch {
	case err == nil:
		r.State, r.ExitCode, r.TimedOut, r.OOMKilled, r.OnHost = RunFinished, a.ExitCode, a.TimedOut, a.OOMKilled, a.OnHost
		r.RunMS, r.WaitedMS, r.Worker = a.RunMS, a.WaitedMS, a.Worker
		return
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		r.State = RunCancelled
	case fault.Is(err, fault.Unavailable):
		r.State, r.Detail = RunUnavailable, fault.Message(err)
	default:
		r.State = RunFailed
	}
	if len(r.Detail) > 1024 {
		r.Detail = strings.ToValidUTF8(r.Detail[:1024], "")
	}
}

func (t *Tools) logger() *slog.Logger {
	if t.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Logger
}

// job reads the call's arguments into a run.
func (t *Tools) job(c tools.Call) (Job, error) {
	lang, _ := tools.String(c.Args, "language")
	if _, ok := Language(lang).Command(""); !ok {
		return Job{}, fault.New(fault.Invalid, `language must be "python" or "sh"`)
	}
	code, _ := tools.String(c.Args, "code")
	if len(code) > MaxSource {
		return Job{}, fault.New(fault.TooLarge, "code is %d bytes; at most %d", len(code), MaxSource)
	}
	secs, given := tools.Int(c.Args, "timeout_seconds")
	if given && secs == 0 || secs > int64(MaxTimeout.Seconds()) {
		secs = -1 // out of range: Timeout refuses it
	}
	if _, err := Timeout(int(secs)); err != nil {
		return Job{}, err
	}
	image := c.Subject.Tenant.Settings.SandboxImage
	if image == "" && len(t.Images) > 0 {
		image = t.Images[0]
	}
	// The per-employee cap applies to each AI employee; any other caller
	// (an operator key, an external client) counts as one of its own.
	p := c.Principal()
	employee := p.AgentID
	if !p.IsEmployee() {
		employee = uuid.NewSHA1(p.TenantID, []byte(p.ID()))
	}
	return Job{Employee: employee, RunID: uuid.New(), Image: image, Language: Language(lang), Source: code, TimeoutSec: int(secs)}, nil
}

// failed turns a plane or sandbox error into the tool's answer: every way
// the sandbox could not run is an unavailable error, audited as such.
func (t *Tools) failed(ctx context.Context, image string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, plane.ErrNoWorker):
		err = Unavailable("no_worker", image, "no sandbox worker is running", err)
	case errors.Is(err, plane.ErrWorkerLost):
		err = lost(err)
	case fault.Is(err, fault.Unavailable) && !strings.HasPrefix(fault.Message(err), "Script sandbox unavailable"):
		err = Unavailable("worker_unreachable", image, fault.Message(err), err)
	}
	if fault.Is(err, fault.Unavailable) {
		return unavailable(err)
	}
	return err
}

func unavailable(err error) error { return &tools.EventError{Event: EventUnavailable, Err: err} }

// answer renders a finished run for the model.
func answer(a Answer) *tools.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "Exit code %d.", a.ExitCode)
	if note := a.Result().Note(); note != "" {
		b.WriteString(" " + note)
	}
	res := &tools.Result{Structured: a}
	if a.OnHost {
		fmt.Fprintf(&b, " The sandbox was unavailable (%s), so the script ran on a worker's host without a sandbox, as this tenant's settings allow.", a.Unavailable)
		res.Event = EventBypassed
	}
	b.WriteString("\n")
	b.WriteString(a.Output)
	res.Text = b.String()
	return res
}
