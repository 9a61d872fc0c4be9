package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
)

// The worker plane's names for workspaces: a workspace no worker holds is
// opened by any worker of Pool; every call for a held one goes to its
// worker.
const (
	Pool   = "workspace"
	KindOp = "workspace.op"
)

// ErrNotHeld is a call addressed to a worker that does not hold the
// workspace (it restarted, or let the workspace go).
var ErrNotHeld = errors.New("this worker does not hold the workspace")

// opJob is a KindOp payload.
type opJob struct {
	Ref  Ref  `json:"ref"`
	Op   Op   `json:"op"`
	Open bool `json:"open"`
}

// opAnswer is a worker's reply: the op's answer, or why it was not run
// there (not held, or held by another worker).
type opAnswer struct {
	Worker  string  `json:"worker"`
	Answer  *Answer `json:"answer,omitempty"`
	NotHeld bool    `json:"not_held,omitempty"`
	HeldBy  string  `json:"held_by,omitempty"`
}

// Runner runs an op on whichever worker holds the workspace.
type Runner interface {
	Run(ctx context.Context, ws Workspace, ref Ref, op Op) (Answer, error)
	// Held runs op only on a worker that holds the workspace now (an
	// operator's look never starts a container); ErrNotHeld otherwise.
	Held(ctx context.Context, ws Workspace, ref Ref, op Op) (Answer, error)
}

// PlaneRunner sends ops over the worker plane: to the worker whose lease
// is live, else to the pool, where a worker takes the lease, restores the
// tree and starts the container. A lease holder that stopped answering
// loses the lease and the next worker restores the last saved snapshot.
type PlaneRunner struct {
	Plane plane.Caller
	Store Store
	// OpenWait bounds how long an open waits for a worker (zero: 30 s).
	OpenWait time.Duration
	Now      func() time.Time
}

var _ Runner = (*PlaneRunner)(nil)

// Run implements Runner.
func (r *PlaneRunner) Run(ctx context.Context, ws Workspace, ref Ref, op Op) (Answer, error) {
	worker := ""
	if ws.Leased(r.now()) {
		worker = ws.LeaseWorker
	}
	for try := 0; try < 3; try++ {
		a, err := r.call(ctx, ref, op, worker)
		var held *HeldError
		switch {
		case errors.As(err, &held) && held.Worker != worker:
			worker = held.Worker
		case worker != "" && (errors.Is(err, ErrNotHeld) || errors.Is(err, plane.ErrNoWorker)):
			// The holder restarted or died: its lease goes, and the
			// pool restores the last snapshot elsewhere.
			if derr := r.Store.Drop(ctx, ref.Tenant, ref.ID, worker); derr != nil {
				return Answer{}, derr
			}
			worker = ""
		default:
			return a, err
		}
	}
	return Answer{}, fault.New(fault.Unavailable, "the workspace moved between workers while the call was sent; retry")
}

// Held implements Runner.
func (r *PlaneRunner) Held(ctx context.Context, ws Workspace, ref Ref, op Op) (Answer, error) {
	if !ws.Leased(r.now()) {
		return Answer{}, ErrNotHeld
	}
	a, err := r.call(ctx, ref, op, ws.LeaseWorker)
	if errors.Is(err, plane.ErrNoWorker) {
		return Answer{}, ErrNotHeld
	}
	return a, err
}

func (r *PlaneRunner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// call sends op to worker, or to the pool (to open) when worker is empty.
func (r *PlaneRunner) call(ctx context.Context, ref Ref, op Op, worker string) (Answer, error) {
	raw, err := json.Marshal(opJob{Ref: ref, Op: op, Open: worker == ""})
	if err != nil {
		return Answer{}, err
	}
	req := plane.Request{Kind: KindOp, Tenant: ref.Tenant, Payload: raw, Worker: worker, MaxWait: 45 * time.Second}
	if worker == "" {
		req.Pool, req.MaxWait = Pool, r.OpenWait
		if req.MaxWait <= 0 {
			req.MaxWait = 30 * time.Second
		}
	}
	out, err := r.Plane.Call(ctx, req, nil)
	switch {
	case worker == "" && errors.Is(err, plane.ErrNoWorker):
		return Answer{}, fault.New(fault.Unavailable, "no workspace worker is running; workspace tools are unavailable until one starts")
	case worker == "" && errors.Is(err, plane.ErrBusy):
		return Answer{}, fault.New(fault.Unavailable, "every workspace worker is full; retry later")
	case err != nil:
		return Answer{}, err
	}
	var a opAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return Answer{}, fmt.Errorf("workspace: a worker's answer is unreadable")
	}
	switch {
	case a.NotHeld:
		return Answer{}, ErrNotHeld
	case a.HeldBy != "":
		return Answer{}, &HeldError{Worker: a.HeldBy}
	case a.Answer == nil:
		return Answer{}, fmt.Errorf("workspace: a worker answered nothing")
	}
	return *a.Answer, nil
}

// Handlers are a worker's side of PlaneRunner. The tenant of every call
// is the plane request's, whatever the payload says.
func Handlers(h Host) map[string]plane.Handler {
	return map[string]plane.Handler{KindOp: func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
		var job opJob
		if err := json.Unmarshal(j.Payload, &job); err != nil {
			return nil, fault.New(fault.Invalid, "unreadable workspace call")
		}
		job.Ref.Tenant = j.Tenant
		a, err := h.Do(ctx, job.Ref, job.Op, job.Open)
		var held *HeldError
		switch {
		case errors.Is(err, ErrNotHeld):
			return json.Marshal(opAnswer{Worker: j.Worker, NotHeld: true})
		case errors.As(err, &held):
			return json.Marshal(opAnswer{Worker: j.Worker, HeldBy: held.Worker})
		case err != nil:
			return nil, err
		}
		return json.Marshal(opAnswer{Worker: j.Worker, Answer: &a})
	}}
}
