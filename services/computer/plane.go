package computer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
)

// The worker plane's names for computer use: a session starts on any
// worker of Pool, and every later call goes to the one worker that holds
// it.
const (
	Pool      = "computer"
	KindStart = "computer.start"
	KindDo    = "computer.do"
	KindStop  = "computer.stop"
	KindPut   = "computer.put"
)

// Waits on the plane. A start may wait a little for a worker with room (a
// worker at its session cap leaves starts in the pool); a call for a held
// session waits only for its own worker.
const (
	startMaxWait  = 30 * time.Second
	actionMaxWait = 45 * time.Second
)

// startJob is a KindStart payload. The worker loads the workspace's files
// itself: a workspace may hold more than a plane request carries.
type startJob struct {
	Agent     uuid.UUID  `json:"agent"`
	Session   uuid.UUID  `json:"session"`
	Width     int        `json:"width"`
	Height    int        `json:"height"`
	Allowed   []string   `json:"allowed"`
	Workspace *uuid.UUID `json:"workspace,omitempty"`
	// Tree is the employee's file-tool workspace to mount: the start is
	// sent to the computer worker of the process that holds it.
	Tree *uuid.UUID `json:"tree,omitempty"`
}

// sessionJob is the payload of the calls for a held session.
type sessionJob struct {
	Session uuid.UUID `json:"session"`
	Action  *Action   `json:"action,omitempty"`
	File    *File     `json:"file,omitempty"`
}

// jobAnswer is what a worker answers. Lost says the worker does not hold
// the session (it restarted, or the container died): a plane error code
// cannot say that by itself.
type jobAnswer struct {
	Worker  string   `json:"worker,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
	Lost    string   `json:"lost,omitempty"`
	// NoTree says why a start placed for a workspace did not run: the
	// worker could not mount it (the caller starts elsewhere without it).
	NoTree string `json:"no_tree,omitempty"`
}

// PlaneDriver is the Driver of a process that holds no browser: it sends
// each call over the worker plane, a start to the pool and every later call
// to the worker that holds the session.
type PlaneDriver struct {
	Plane plane.Caller
	// StartWait bounds how long a start waits for a worker with room
	// (zero: 30 s).
	StartWait time.Duration
}

var _ Driver = PlaneDriver{}

// Start implements Driver.
func (d PlaneDriver) Start(ctx context.Context, s Spec) (string, error) {
	job := startJob{Agent: s.Agent, Session: s.Session, Width: s.Width, Height: s.Height, Allowed: s.Allowed, Workspace: s.Workspace}
	wait := d.StartWait
	if wait <= 0 {
		wait = startMaxWait
	}
	req := plane.Request{Kind: KindStart, Pool: Pool, Tenant: s.Tenant, MaxWait: wait}
	if s.Tree != nil {
		job.Tree = &s.Tree.ID
		req.Pool, req.Worker = "", s.Tree.Worker
	}
	raw, err := json.Marshal(job)
	if err != nil {
		return "", err
	}
	req.Payload = raw
	out, err := d.Plane.Call(ctx, req, nil)
	switch {
	case s.Tree != nil && errors.Is(err, plane.ErrNoWorker):
		return "", &TreeError{Reason: noteNoComputer}
	case s.Tree != nil && fault.Is(err, fault.Unavailable) && !errors.Is(err, plane.ErrWorkerLost):
		// The worker holding the workspace cannot start a browser now (its
		// slots are full, or its engine failed): any other worker may.
		return "", &TreeError{Reason: noteTreeWorkerUnavailable + ": " + fault.Message(err)}
	case errors.Is(err, plane.ErrNoWorker):
		return "", errNoDriver
	case errors.Is(err, plane.ErrBusy):
		return "", fault.New(fault.Unavailable, "all computer workers are busy: each holds as many browser sessions as it may, and none had room within %s; retry later", wait)
	case errors.Is(err, plane.ErrWorkerLost):
		return "", fault.New(fault.Unavailable, "the worker starting your session stopped answering; call computer_session_start again")
	case err != nil:
		return "", err
	}
	var a jobAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return "", fmt.Errorf("computer use: a worker's start answer is unreadable")
	}
	if a.NoTree != "" && s.Tree != nil {
		return "", &TreeError{Reason: a.NoTree}
	}
	if a.Worker == "" {
		return "", fmt.Errorf("computer use: a worker's start answer is unreadable")
	}
	return a.Worker, nil
}

// Do implements Driver.
func (d PlaneDriver) Do(ctx context.Context, r Ref, a Action) (Outcome, error) {
	ans, err := d.call(ctx, r, KindDo, sessionJob{Session: r.Session, Action: &a})
	if err != nil {
		return Outcome{}, err
	}
	if ans.Outcome == nil {
		return Outcome{}, nil
	}
	return *ans.Outcome, nil
}

// Stop implements Driver.
func (d PlaneDriver) Stop(ctx context.Context, r Ref) error {
	_, err := d.call(ctx, r, KindStop, sessionJob{Session: r.Session})
	return err
}

// Put implements Driver.
func (d PlaneDriver) Put(ctx context.Context, r Ref, f File) error {
	_, err := d.call(ctx, r, KindPut, sessionJob{Session: r.Session, File: &f})
	return err
}

// call sends one call to the worker holding r. A worker with no heartbeat,
// one that stops answering, and one that does not hold the session all
// mean the session is lost.
func (d PlaneDriver) call(ctx context.Context, r Ref, kind string, job sessionJob) (jobAnswer, error) {
	raw, err := json.Marshal(job)
	if err != nil {
		return jobAnswer{}, err
	}
	out, err := d.Plane.Call(ctx, plane.Request{Kind: kind, Worker: r.Worker, Tenant: r.Tenant, Payload: raw, MaxWait: actionMaxWait}, nil)
	switch {
	case errors.Is(err, plane.ErrNoWorker), errors.Is(err, plane.ErrWorkerLost):
		return jobAnswer{}, fmt.Errorf("worker %s: %w: %w", r.Worker, err, ErrLost)
	case err != nil:
		return jobAnswer{}, err
	}
	var a jobAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return jobAnswer{}, fmt.Errorf("computer use: a worker's answer is unreadable")
	}
	if a.Lost != "" {
		return jobAnswer{}, fmt.Errorf("%s: %w", a.Lost, ErrLost)
	}
	return a, nil
}

// StartRoom is a computer worker's PlaneWorkerOptions.PoolRoom: starts are
// the pool's only work, and the worker takes one only while the sessions it
// holds (held) and the starts it is running leave room under maxSessions.
// A full worker leaves starts in the pool for a worker with room, and takes
// them again once a session of its own ends.
func StartRoom(held func() int, maxSessions int) func(starting int) bool {
	return func(starting int) bool { return held()+starting < maxSessions }
}

// FileSource loads a workspace's files for a session that starts on a
// worker; WorkspaceStore is one.
type FileSource interface {
	AllFiles(ctx context.Context, tenantID, agentID, id uuid.UUID) ([]File, error)
}

// Handlers are a worker's side of PlaneDriver: they run each call on d, the
// sessions this worker holds, load workspaces from files, and borrow the
// employee's live file-tool workspace from trees (nil: this process holds
// no workspaces). The tenant of every call is the plane request's.
func Handlers(d Driver, files FileSource, trees TreePinner) map[string]plane.Handler {
	return map[string]plane.Handler{
		KindStart: func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
			var job startJob
			if err := json.Unmarshal(j.Payload, &job); err != nil {
				return nil, fault.New(fault.Invalid, "unreadable session start")
			}
			spec := Spec{Tenant: j.Tenant, Agent: job.Agent, Session: job.Session, Width: job.Width, Height: job.Height,
				Allowed: job.Allowed, Workspace: job.Workspace}
			if job.Tree != nil {
				if trees == nil {
					return json.Marshal(jobAnswer{NoTree: noteNoComputer})
				}
				dir, release, err := trees.Pin(ctx, j.Tenant, job.Agent, *job.Tree)
				if err != nil {
					return json.Marshal(jobAnswer{NoTree: noteNotHeldHere})
				}
				spec.TreeDir, spec.TreeRelease = dir, release
			}
			worker, err := startSpec(ctx, d, files, spec)
			if err != nil {
				if spec.TreeRelease != nil {
					spec.TreeRelease()
				}
				return nil, err
			}
			return json.Marshal(jobAnswer{Worker: worker})
		},
		KindDo: sessionHandler(func(ctx context.Context, r Ref, job sessionJob) (jobAnswer, error) {
			if job.Action == nil {
				return jobAnswer{}, fault.New(fault.Invalid, "an action call needs an action")
			}
			o, err := d.Do(ctx, r, *job.Action)
			return jobAnswer{Outcome: &o}, err
		}),
		KindStop: sessionHandler(func(ctx context.Context, r Ref, _ sessionJob) (jobAnswer, error) {
			return jobAnswer{}, d.Stop(ctx, r)
		}),
		KindPut: sessionHandler(func(ctx context.Context, r Ref, job sessionJob) (jobAnswer, error) {
			if job.File == nil {
				return jobAnswer{}, fault.New(fault.Invalid, "a put call needs a file")
			}
			return jobAnswer{}, d.Put(ctx, r, *job.File)
		}),
	}
}

// startSpec loads the attached small-file workspace into spec and starts
// the session on d.
func startSpec(ctx context.Context, d Driver, files FileSource, spec Spec) (string, error) {
	if spec.Workspace != nil {
		fs, err := files.AllFiles(ctx, spec.Tenant, spec.Agent, *spec.Workspace)
		if err != nil {
			return "", err
		}
		spec.Files = append([]File{}, fs...)
	}
	return d.Start(ctx, spec)
}

func sessionHandler(run func(ctx context.Context, r Ref, job sessionJob) (jobAnswer, error)) plane.Handler {
	return func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
		var job sessionJob
		if err := json.Unmarshal(j.Payload, &job); err != nil {
			return nil, fault.New(fault.Invalid, "unreadable session call")
		}
		a, err := run(ctx, Ref{Tenant: j.Tenant, Session: job.Session, Worker: j.Worker}, job)
		if errors.Is(err, ErrLost) {
			return json.Marshal(jobAnswer{Lost: err.Error()})
		}
		if err != nil {
			return nil, err
		}
		return json.Marshal(a)
	}
}
