package responsibilities

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
)

// Limits of what an operator sets.
const (
	MaxName          = 200
	MaxCharter       = 20000
	MinPeriodSecs    = 60
	MaxPeriodSecs    = 31622400 // a leap year
	MaxRunLimit      = 10000
	MaxFollowupLimit = 10000
	MaxSpendCapCents = 1_000_000_000_00 // ten million in the currency's main unit
	MinWakeSecs      = 60
	MaxSubscriptions = 16
)

// Subscription is a board event that wakes a responsibility.
type Subscription string

// Subscriptions. Each concerns a task under one of the responsibility's
// runs.
const (
	OnTaskUnblocked Subscription = "task_unblocked" // a blocked task under a run was unblocked
	OnTaskDone      Subscription = "task_done"      // a task under a run was finished
)

// Subscriptions lists the known subscriptions.
var Subscriptions = []Subscription{OnTaskUnblocked, OnTaskDone}

// Draft is what an operator creates a responsibility from. Zero limits
// take the defaults below.
type Draft struct {
	AgentID             uuid.UUID
	Name                string
	Charter             string
	Schedule            string
	PeriodSecs          int
	RunLimit            int
	FollowupLimit       *int
	SpendCapCents       int64
	MinWakeIntervalSecs int
	StopAt              *time.Time
	Subscriptions       []string
	Notify              *NotifyChange
}

// Defaults of a new responsibility.
const (
	DefaultPeriodSecs    = 86400
	DefaultRunLimit      = 24
	DefaultFollowupLimit = 4
	DefaultMinWakeSecs   = 300
)

// Change is an operator's change; nil fields stay. ClearStopAt removes
// stop_at.
type Change struct {
	Name                *string
	Charter             *string
	Schedule            *string
	PeriodSecs          *int
	RunLimit            *int
	FollowupLimit       *int
	SpendCapCents       *int64
	MinWakeIntervalSecs *int
	StopAt              *time.Time
	ClearStopAt         bool
	Subscriptions       *[]string
	Status              *Status
	Notify              *NotifyChange
}

// Create creates an active responsibility of d.AgentID (an employee of the
// tenant, checked by the caller) in epoch 1. tz is the tenant's time zone,
// in which the schedule is read. Errors: fault.Invalid for a bad field.
func (s *Service) Create(ctx context.Context, tenantID uuid.UUID, tz, by string, d Draft) (Responsibility, error) {
	fl := DefaultFollowupLimit
	if d.FollowupLimit != nil {
		fl = *d.FollowupLimit
	}
	r := Responsibility{ID: uuid.New(), TenantID: tenantID, AgentID: d.AgentID, Name: strings.TrimSpace(d.Name), Charter: d.Charter,
		Schedule: strings.TrimSpace(d.Schedule), PeriodSecs: or(d.PeriodSecs, DefaultPeriodSecs), RunLimit: or(d.RunLimit, DefaultRunLimit),
		FollowupLimit: fl, SpendCapCents: d.SpendCapCents, MinWakeIntervalSecs: or(d.MinWakeIntervalSecs, DefaultMinWakeSecs),
		StopAt: d.StopAt, Subscriptions: d.Subscriptions, Status: Active, CreatedBy: by, WindowAnchor: s.now().UTC().Truncate(time.Second)}
	if err := checkStopAt(r.StopAt, s.now()); err != nil {
		return Responsibility{}, err
	}
	if err := r.Check(tz, s.now()); err != nil {
		return Responsibility{}, err
	}
	var err error
	if r.Notify, r.NotifySecret, err = s.applyNotify(DefaultNotify(), d.Notify); err != nil {
		return Responsibility{}, err
	}
	if err := s.store.CreateResponsibility(ctx, &r); err != nil {
		return Responsibility{}, err
	}
	return r, nil
}

func checkStopAt(t *time.Time, now time.Time) error {
	if t != nil && !t.After(now) {
		return fault.New(fault.Invalid, "stop_at must be in the future")
	}
	return nil
}

func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Update applies an operator's change. Every change, even one that sets a
// field to its current value, bumps the epoch and cancels the pending
// wake-up. A stopped responsibility stays stopped. Errors: fault.NotFound,
// fault.Invalid for a bad field or an empty change, fault.Conflict for
// resuming a stopped one.
func (s *Service) Update(ctx context.Context, tenantID, id uuid.UUID, tz string, ch Change) (Responsibility, error) {
	if ch == (Change{}) {
		return Responsibility{}, fault.New(fault.Invalid, "nothing to change: send at least one field")
	}
	if err := checkStopAt(ch.StopAt, s.now()); err != nil {
		return Responsibility{}, err
	}
	return s.store.UpdateResponsibility(ctx, tenantID, id, func(r *Responsibility) error {
		was := r.Status
		apply(r, ch)
		var err error
		if r.Notify, r.NotifySecret, err = s.applyNotify(r.Notify, ch.Notify); err != nil {
			return err
		}
		if was == Stopped && r.Status != Stopped {
			return fault.New(fault.Conflict, "a stopped responsibility stays stopped; create a new one instead")
		}
		if ch.StopAt == nil && !ch.ClearStopAt && ch.Status != nil && *ch.Status == Stopped {
			return nil // stopping needs no other field to be valid
		}
		return r.Check(tz, s.now())
	})
}

func apply(r *Responsibility, ch Change) {
	set(&r.Name, ch.Name)
	set(&r.Charter, ch.Charter)
	set(&r.Schedule, ch.Schedule)
	set(&r.PeriodSecs, ch.PeriodSecs)
	set(&r.RunLimit, ch.RunLimit)
	set(&r.FollowupLimit, ch.FollowupLimit)
	set(&r.SpendCapCents, ch.SpendCapCents)
	set(&r.MinWakeIntervalSecs, ch.MinWakeIntervalSecs)
	set(&r.Subscriptions, ch.Subscriptions)
	set(&r.Status, ch.Status)
	if ch.StopAt != nil {
		r.StopAt = ch.StopAt
	}
	if ch.ClearStopAt {
		r.StopAt = nil
	}
	r.Name, r.Schedule = strings.TrimSpace(r.Name), strings.TrimSpace(r.Schedule)
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Delete deletes a responsibility with its runs, skips and wake-ups; the
// runs' tasks stay on the board. Errors: fault.NotFound.
func (s *Service) Delete(ctx context.Context, tenantID, id uuid.UUID) error {
	return s.store.DeleteResponsibility(ctx, tenantID, id)
}

// Check validates what an operator sets; tz is the tenant's time zone, in
// which a schedule must fire at least once (before stop_at, when set). A
// stop_at in the past is checked only when it is set (checkStopAt).
func (r Responsibility) Check(tz string, now time.Time) error {
	switch {
	case r.Name == "" || !utf8.ValidString(r.Name) || utf8.RuneCountInString(r.Name) > MaxName:
		return fault.New(fault.Invalid, "name must be 1-%d characters", MaxName)
	case !utf8.ValidString(r.Charter) || utf8.RuneCountInString(r.Charter) > MaxCharter:
		return fault.New(fault.Invalid, "charter must be at most %d characters", MaxCharter)
	case r.PeriodSecs < MinPeriodSecs || r.PeriodSecs > MaxPeriodSecs:
		return fault.New(fault.Invalid, "period_secs must be from %d to %d", MinPeriodSecs, MaxPeriodSecs)
	case r.RunLimit < 1 || r.RunLimit > MaxRunLimit:
		return fault.New(fault.Invalid, "run_limit must be from 1 to %d", MaxRunLimit)
	case r.FollowupLimit < 0 || r.FollowupLimit > MaxFollowupLimit:
		return fault.New(fault.Invalid, "followup_limit must be from 0 to %d", MaxFollowupLimit)
	case r.SpendCapCents < 1 || r.SpendCapCents > MaxSpendCapCents:
		return fault.New(fault.Invalid, "spend_cap_cents is required: from 1 to %d (a window whose spend reaches it opens no run)", int64(MaxSpendCapCents))
	case r.MinWakeIntervalSecs < MinWakeSecs || r.MinWakeIntervalSecs > MaxPeriodSecs:
		return fault.New(fault.Invalid, "min_wake_interval_secs must be from %d to %d", MinWakeSecs, MaxPeriodSecs)
	case !r.Status.Valid():
		return fault.New(fault.Invalid, "status must be active, paused or stopped")
	}
	if err := checkSubscriptions(r.Subscriptions); err != nil {
		return err
	}
	return r.checkSchedule(tz, now)
}

func (r Responsibility) checkSchedule(tz string, now time.Time) error {
	if r.Schedule == "" {
		return nil
	}
	next, err := board.NextRun(r.Schedule, tz, now)
	if err != nil {
		return fault.New(fault.Invalid, "%s", strings.ReplaceAll(fault.Message(err), "routine", "responsibility"))
	}
	if r.StopAt != nil && next.After(*r.StopAt) {
		return fault.New(fault.Invalid, "schedule %q next fires at %s, after stop_at; it would never run", r.Schedule, next.Format(time.RFC3339))
	}
	return nil
}

func checkSubscriptions(subs []string) error {
	if len(subs) > MaxSubscriptions {
		return fault.New(fault.Invalid, "at most %d subscriptions", MaxSubscriptions)
	}
	for i, v := range subs {
		if !slices.Contains(Subscriptions, Subscription(v)) {
			return fault.New(fault.Invalid, "subscriptions[%d] %q is not one of task_unblocked, task_done", i, v)
		}
		if slices.Contains(subs[:i], v) {
			return fault.New(fault.Invalid, "subscriptions[%d] %q is given twice", i, v)
		}
	}
	return nil
}

// NextScheduled returns the first time after after that the
// responsibility's schedule fires in the tenant's time zone tz; false when
// it has no schedule, or the time is past stop_at.
func (r Responsibility) NextScheduled(tz string, after time.Time) (time.Time, bool) {
	if r.Schedule == "" {
		return time.Time{}, false
	}
	next, err := board.NextRun(r.Schedule, tz, after)
	if err != nil || (r.StopAt != nil && next.After(*r.StopAt)) {
		return time.Time{}, false
	}
	return next, true
}
