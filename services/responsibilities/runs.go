package responsibilities

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/keyset"
	"github.com/visorhq/visor/services/rounds"
)

// SkipCause says why a wake-up opened no run.
type SkipCause string

// Skip causes.
const (
	OverRunLimit  SkipCause = "run_limit"      // the window already holds run_limit runs
	OverSpendCap  SkipCause = "spend_cap"      // the window's reported spend reached spend_cap_cents
	NotActiveNow  SkipCause = "not_active"     // the responsibility is paused or stopped
	PastStopAt    SkipCause = "stop_at"        // stop_at has passed
	OlderEpoch    SkipCause = "epoch_changed"  // the wake-up was armed before an operator change
	OwnerInactive SkipCause = "agent_inactive" // the owning employee is suspended or gone
)

// Skip records a wake-up that did not open a run, and why. Operators read
// them through the admin API.
type Skip struct {
	ID               uuid.UUID `json:"id"`
	TenantID         uuid.UUID `json:"-"`
	ResponsibilityID uuid.UUID `json:"responsibility_id"`
	Reason           RunReason `json:"reason"`
	Cause            SkipCause `json:"cause"`
	Detail           string    `json:"detail"`
	Epoch            int64     `json:"epoch"`
	At               time.Time `json:"at"`
}

// SkipError is OpenRun's answer when the wake-up opened no run; the skip
// is already recorded.
type SkipError struct{ Skip Skip }

func (e *SkipError) Error() string {
	return fmt.Sprintf("no run opened (%s): %s", e.Skip.Cause, e.Skip.Detail)
}

// Wake is what asks for a run.
type Wake struct {
	Reason RunReason
	// Epoch, when not zero, is the epoch the wake-up was armed in; a
	// responsibility changed since then opens no run.
	Epoch int64
	// Data is text another party wrote (an operator's answer), carried to
	// the round as fenced data.
	Data []rounds.Data
}

// Opening is what StartRun hands the planner, read under the
// responsibility's row lock: the responsibility, whether its owner is an
// active employee, the tenant's time zone, the open run (nil when none)
// and the usage of any window.
type Opening struct {
	Responsibility Responsibility
	OwnerActive    bool
	TimeZone       string
	OpenRun        *Run
	Usage          func(from, to time.Time) (Usage, error)
}

// RunPlan is what StartRun writes for a run that opens: the run, its task
// and its round's wake-up. An open run of the same responsibility is
// closed first (with whatever its runtime reported).
type RunPlan struct {
	Run    Run
	Task   board.Task
	Wakeup rounds.Wakeup
}

// RunStore persists runs, their spend and skips. Every method takes the
// tenant explicitly; another tenant's row is fault.NotFound.
type RunStore interface {
	// StartRun locks the responsibility and asks plan what to write: a run
	// (RunPlan) or a skip. Either is written in the same transaction.
	StartRun(ctx context.Context, tenantID, responsibilityID uuid.UUID, plan func(Opening) (*RunPlan, *Skip, error)) (Run, error)
	// ReportSpend adds cents to the open run's reported cost; a closed
	// run's is fault.Conflict.
	ReportSpend(ctx context.Context, tenantID, runID uuid.UUID, cents int64) (Run, error)
	// Runs lists a responsibility's runs, newest first.
	Runs(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *RunPosition, limit int) ([]Run, error)
	// Skips lists a responsibility's skips, newest first.
	Skips(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *RunPosition, limit int) ([]Skip, error)
	// AgentSpend sums the cost reported by the runs of agentID's
	// responsibilities opened in [from, to), in cents.
	AgentSpend(ctx context.Context, tenantID, agentID uuid.UUID, from, to time.Time) (int64, error)
	// RunTaskOf returns the task of the run of one of agentID's
	// responsibilities (any employee's when agentID is uuid.Nil) that task
	// is, or is under; false when none.
	RunTaskOf(ctx context.Context, tenantID, agentID, task uuid.UUID) (uuid.UUID, bool, error)
}

// RunPosition is a run's or skip's place in a newest-first list.
type RunPosition = keyset.Position

// MaxSpendReport is the most one spend report may add, in cents.
const MaxSpendReport = 100_000_000

// OpenRun opens a run of the responsibility for w: its own task on the
// board, assigned to the owner, and a round of the owner on that task. A
// wake-up that may not open one (not active, past stop_at, an older epoch,
// the owner inactive, the window's run limit or spend cap reached) is
// recorded as a skip and answered with *SkipError. A previous run still
// open is closed first, and its rounds ended (their tokens stop working). Errors: fault.NotFound for no such
// responsibility.
func (s *Service) OpenRun(ctx context.Context, tenantID, id uuid.UUID, w Wake) (Run, error) {
	if !w.Reason.Valid() {
		return Run{}, fault.New(fault.Invalid, "unknown run reason %q", w.Reason)
	}
	now := s.now()
	var closing *Run
	run, err := s.store.StartRun(ctx, tenantID, id, func(o Opening) (*RunPlan, *Skip, error) {
		closing = nil
		p, skip, err := s.decide(o, w, now, o.Usage)
		if p != nil {
			closing = o.OpenRun
		}
		return p, skip, err
	})
	if err == nil && closing != nil {
		err = s.endRounds(ctx, *closing)
	}
	return run, err
}

// decide is the one rule of whether a wake-up opens a run: it answers the
// run to write, or the skip to record and why (the gate, then the
// window's run limit counting pending follow-ups, then its spend cap).
// usage reads a window's usage under the responsibility's lock.
func (s *Service) decide(o Opening, w Wake, now time.Time, usage func(from, to time.Time) (Usage, error)) (*RunPlan, *Skip, error) {
	r := o.Responsibility
	skip := func(c SkipCause, format string, args ...any) (*RunPlan, *Skip, error) {
		return nil, &Skip{ID: uuid.New(), TenantID: r.TenantID, ResponsibilityID: r.ID, Reason: w.Reason, Cause: c,
			Detail: fmt.Sprintf(format, args...), Epoch: r.Epoch, At: now}, nil
	}
	if c, detail, ok := s.gate(o, w, now); !ok {
		return skip(c, "%s", detail)
	}
	from, to := r.Window(now)
	u, err := usage(from, to)
	if err != nil {
		return nil, nil, err
	}
	reserved := u.PendingFollowups
	if w.Reason == ByFollowup && reserved > 0 {
		reserved-- // the follow-up firing now held one of them
	}
	if u.Runs+reserved >= r.RunLimit {
		return skip(OverRunLimit, "the window %s holds %d runs and %d pending follow-ups; its limit is %d",
			span(from, to), u.Runs, reserved, r.RunLimit)
	}
	if u.SpendCents >= r.SpendCapCents {
		return skip(OverSpendCap, "the window %s has spent %d of its %d cents", span(from, to), u.SpendCents, r.SpendCapCents)
	}
	return s.plan(r, w, now), nil, nil
}

// RoundEnder ends the rounds of a task (rounds.Service.EndRounds): their
// tokens stop working at once and undelivered wake-ups are cancelled.
type RoundEnder interface {
	EndRounds(ctx context.Context, tenantID, taskID, agentID uuid.UUID) error
}

// SetRounds sets where a closed run's rounds are ended.
func (s *Service) SetRounds(e RoundEnder) { s.ender = e }

// endRounds ends the rounds of a run that closed, so its round tokens stop
// working with it rather than at their expiry.
func (s *Service) endRounds(ctx context.Context, run Run) error {
	if s.ender == nil || run.TaskID == uuid.Nil {
		return nil
	}
	return s.ender.EndRounds(ctx, run.TenantID, run.TaskID, uuid.Nil)
}

// gate says whether the responsibility may open a run at all now.
func (s *Service) gate(o Opening, w Wake, now time.Time) (SkipCause, string, bool) {
	r := o.Responsibility
	switch {
	case r.Status != Active:
		return NotActiveNow, fmt.Sprintf("the responsibility is %s", r.Status), false
	case r.StopAt != nil && !now.Before(*r.StopAt):
		return PastStopAt, fmt.Sprintf("the responsibility stopped at %s", r.StopAt.UTC().Format(time.RFC3339)), false
	case w.Epoch != 0 && w.Epoch != r.Epoch:
		return OlderEpoch, fmt.Sprintf("the wake-up was armed in epoch %d; an operator changed the responsibility since (epoch %d)", w.Epoch, r.Epoch), false
	case !o.OwnerActive:
		return OwnerInactive, "the owning AI employee is not active", false
	}
	return "", "", true
}

func (s *Service) plan(r Responsibility, w Wake, now time.Time) *RunPlan {
	task := board.Task{ID: uuid.New(), TenantID: r.TenantID, Kind: board.KindTask,
		Title:       truncate(fmt.Sprintf("%s: run of %s", r.Name, now.UTC().Format("2006-01-02 15:04")), 200),
		Description: truncate(r.Charter, 4000), Status: board.Open, AssigneeID: r.AgentID, CreatorKind: board.BySystem,
		CreatedBy: "responsibility:" + r.ID.String(), Origin: board.FromResponsibility, OriginID: r.ID, Tags: []string{}}
	wake := rounds.New(r.TenantID, r.AgentID, task.ID, rounds.Responsibility, w.Data...)
	run := Run{ID: uuid.New(), TenantID: r.TenantID, ResponsibilityID: r.ID, TaskID: task.ID, Epoch: r.Epoch,
		Reason: w.Reason, OpenedAt: now}
	return &RunPlan{Run: run, Task: task, Wakeup: wake}
}

// CloseRun closes an open run and ends its rounds (their tokens stop
// working). Whatever its runtime reported stays its cost; a run whose
// runtime reported nothing closes as cost_not_counted.
// Errors: fault.NotFound for no such run, fault.Conflict when it is
// already closed.
func (s *Service) CloseRun(ctx context.Context, tenantID, runID uuid.UUID) (Run, error) {
	run, err := s.store.CloseRun(ctx, tenantID, runID, nil)
	if err != nil {
		return run, err
	}
	return run, s.endRounds(ctx, run)
}

// ReportSpend adds what a round spent to its run. Only a round token of
// the run's owner on the run's task reports; cents is 0..MaxSpendReport.
// A report arriving after the run closed is not counted. Errors:
// fault.Invalid for a bad amount, fault.Forbidden for a caller other than
// such a round, fault.NotFound when the round's task is no run's,
// fault.Conflict when the run is closed.
func (s *Service) ReportSpend(ctx context.Context, tenantID, agentID, task uuid.UUID, cents int64) (Run, error) {
	if cents < 0 || cents > MaxSpendReport {
		return Run{}, fault.New(fault.Invalid, "cost_cents must be a whole number from 0 to %d", MaxSpendReport)
	}
	run, err := s.store.RunByTask(ctx, tenantID, task)
	if fault.Is(err, fault.NotFound) {
		return Run{}, fault.New(fault.NotFound, "this round's task %s is not the task of a responsibility run", task)
	}
	if err != nil {
		return Run{}, err
	}
	r, err := s.store.Responsibility(ctx, tenantID, run.ResponsibilityID)
	if err != nil {
		return Run{}, err
	}
	if r.AgentID != agentID {
		return Run{}, fault.New(fault.Forbidden, "only the round of the responsibility's own AI employee reports its spend")
	}
	return s.store.ReportSpend(ctx, tenantID, run.ID, cents)
}

// RunOf is the board's Runs seam: the task of the run roundTask belongs to
// (the run's task or any task under it), when the run is one of agentID's
// responsibilities.
func (s *Service) RunOf(ctx context.Context, tenantID, agentID, roundTask uuid.UUID) (uuid.UUID, bool, error) {
	return s.store.RunTaskOf(ctx, tenantID, agentID, roundTask)
}

var _ board.Runs = (*Service)(nil)

func span(from, to time.Time) string {
	return from.UTC().Format(time.RFC3339) + "/" + to.UTC().Format(time.RFC3339)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// Spend is what the runs of agentID's responsibilities opened in
// [from, to) reported spending, in cents: what counts against the
// employee's budget.
func (s *Service) Spend(ctx context.Context, tenantID, agentID uuid.UUID, from, to time.Time) (int64, error) {
	return s.store.AgentSpend(ctx, tenantID, agentID, from, to)
}
