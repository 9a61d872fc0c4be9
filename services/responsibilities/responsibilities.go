// Package responsibilities holds continuous responsibilities: the standing
// work of one AI employee, set up and changed only by operators. A
// responsibility wakes its employee for runs (on its schedule, a due
// follow-up, an answered question or a subscribed board event); inside a
// run the employee may arm one follow-up or ask one question, within the
// window's limits. Three MCP tools expose it to employees:
// responsibility_get, responsibility_followup and responsibility_ask.
package responsibilities

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/keyset"
)

// Status is whether a responsibility wakes its employee.
type Status string

// Statuses. Only an active responsibility opens runs or takes wake-ups.
const (
	Active  Status = "active"
	Paused  Status = "paused"
	Stopped Status = "stopped"
)

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return s == Active || s == Paused || s == Stopped }

// Responsibility is one standing responsibility of one AI employee.
type Responsibility struct {
	ID       uuid.UUID `json:"id"`
	TenantID uuid.UUID `json:"-"`
	AgentID  uuid.UUID `json:"agent_id"`
	Name     string    `json:"name"`
	Charter  string    `json:"charter"`
	// Schedule is a cron expression in the tenant's time zone; empty when
	// only follow-ups, answers and events wake it.
	Schedule string `json:"schedule"`
	// The window: consecutive periods of PeriodSecs from WindowAnchor.
	PeriodSecs          int        `json:"period_secs"`
	WindowAnchor        time.Time  `json:"window_anchor"`
	RunLimit            int        `json:"run_limit"`
	FollowupLimit       int        `json:"followup_limit"`
	SpendCapCents       int64      `json:"spend_cap_cents"`
	MinWakeIntervalSecs int        `json:"min_wake_interval_secs"`
	StopAt              *time.Time `json:"stop_at,omitempty"`
	Subscriptions       []string   `json:"subscriptions"`
	Status              Status     `json:"status"`
	Epoch               int64      `json:"epoch"`
	// Notify is how its questions are pushed to operators.
	Notify Notify `json:"notify,omitzero"`
	// NotifySecret is the shown form of a new signing secret of the
	// notify webhook, set only in the answer to the change that made it.
	NotifySecret string    `json:"notify_secret,omitempty"`
	CreatedBy    string    `json:"created_by"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Window returns the bounds [from, to) of the window holding t.
func (r Responsibility) Window(t time.Time) (from, to time.Time) {
	period := time.Duration(r.PeriodSecs) * time.Second
	if period <= 0 {
		period = time.Hour
	}
	k := t.Sub(r.WindowAnchor) / period
	if t.Before(r.WindowAnchor) && t.Sub(r.WindowAnchor)%period != 0 {
		k--
	}
	from = r.WindowAnchor.Add(k * period)
	return from, from.Add(period)
}

// RunReason says what opened a run.
type RunReason string

// Run reasons.
const (
	BySchedule RunReason = "schedule"
	ByFollowup RunReason = "followup"
	ByAnswer   RunReason = "answer"
	ByEvent    RunReason = "event"
	ByOperator RunReason = "operator"
)

// Valid reports whether r is a known reason.
func (r RunReason) Valid() bool {
	switch r {
	case BySchedule, ByFollowup, ByAnswer, ByEvent, ByOperator:
		return true
	}
	return false
}

// Run is one occurrence of a responsibility.
type Run struct {
	ID               uuid.UUID  `json:"id"`
	TenantID         uuid.UUID  `json:"-"`
	ResponsibilityID uuid.UUID  `json:"responsibility_id"`
	TaskID           uuid.UUID  `json:"task_id,omitzero"`
	Epoch            int64      `json:"epoch"`
	Reason           RunReason  `json:"reason"`
	OpenedAt         time.Time  `json:"opened_at"`
	ClosedAt         *time.Time `json:"closed_at,omitempty"`
	// CostCents sums what the runtime reported for the run's round; nil
	// while it reported nothing.
	CostCents *int64 `json:"cost_cents,omitempty"`
	// Reports counts the runtime's spend reports.
	Reports int `json:"reports"`
	// WakeupID is the wake-up that delivered the run's round.
	WakeupID uuid.UUID `json:"wakeup_id,omitzero"`
	// NotCounted is CostNotCounted, for readers of the JSON.
	NotCounted bool `json:"cost_not_counted"`
}

// CostNotCounted reports whether the run closed without a reported cost.
func (r Run) CostNotCounted() bool { return r.ClosedAt != nil && r.CostCents == nil }

// WakeupKind is what the employee armed.
type WakeupKind string

// Wake-up kinds.
const (
	Followup WakeupKind = "followup"
	Question WakeupKind = "question"
)

// WakeupState is where a wake-up stands. Only Pending is live.
type WakeupState string

// Wake-up states.
const (
	Pending   WakeupState = "pending"
	Fired     WakeupState = "fired"
	Answered  WakeupState = "answered"
	Expired   WakeupState = "expired"
	Cancelled WakeupState = "cancelled"
)

// Wakeup is a follow-up or a question armed by the employee from a run.
// DueAt is the follow-up's time, or when the question expires.
type Wakeup struct {
	ID               uuid.UUID   `json:"id"`
	TenantID         uuid.UUID   `json:"-"`
	ResponsibilityID uuid.UUID   `json:"responsibility_id"`
	RunID            uuid.UUID   `json:"run_id"`
	Kind             WakeupKind  `json:"kind"`
	Epoch            int64       `json:"epoch"`
	DueAt            time.Time   `json:"due_at"`
	Question         string      `json:"question,omitempty"`
	Options          []string    `json:"options,omitempty"`
	State            WakeupState `json:"state"`
	CreatedBy        string      `json:"created_by"`
	CreatedAt        time.Time   `json:"created_at"`
	SettledAt        *time.Time  `json:"settled_at,omitempty"`
	// Flags are the injection-scan rules a question matched
	// (services/injection); AnswerFlags those of its answer.
	Flags       []string   `json:"flags,omitempty"`
	Answer      string     `json:"answer,omitempty"`
	AnswerFlags []string   `json:"answer_flags,omitempty"`
	AnsweredBy  string     `json:"answered_by,omitempty"`
	ReportedAt  *time.Time `json:"reported_at,omitempty"`
	// Notice is the push a new question plans, written with it.
	Notice *Notice `json:"-"`
}

// Usage is what one window has used.
type Usage struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Runs opened in the window, and their reported spend.
	Runs       int   `json:"runs"`
	SpendCents int64 `json:"spend_cents"`
	// CostNotCounted counts the window's closed runs that reported no cost.
	CostNotCounted int `json:"cost_not_counted"`
	// Followups armed for a time in the window (not cancelled), and those
	// of them still pending (each will open a run).
	Followups        int `json:"followups"`
	PendingFollowups int `json:"pending_followups"`
}

// Filter selects responsibilities for a list, newest first.
type Filter struct {
	Agent uuid.UUID
	After *Position
	Limit int
}

// Position is a responsibility's place in the newest-first order.
type Position = keyset.Position

// PositionOf returns r's position.
func PositionOf(r Responsibility) Position { return Position{At: r.CreatedAt, ID: r.ID} }

// Armer is what Arm hands the planning function: the locked
// responsibility, its open run (nil when none), its live wake-up (nil when
// none), and the usage of any window, read in the same transaction.
type Armer struct {
	Responsibility Responsibility
	OpenRun        *Run
	Live           *Wakeup
	Usage          func(from, to time.Time) (Usage, error)
	// Notices counts the pushes of questions created in [from, to):
	// queued, held, sent or failed (not refused or withdrawn).
	Notices func(from, to time.Time) (int, error)
}

// Store persists responsibilities. Every method takes the tenant
// explicitly; another tenant's row is fault.NotFound, like a missing one.
type Store interface {
	RunStore
	CreateResponsibility(ctx context.Context, r *Responsibility) error
	Responsibility(ctx context.Context, tenantID, id uuid.UUID) (Responsibility, error)
	ListResponsibilities(ctx context.Context, tenantID uuid.UUID, f Filter) ([]Responsibility, error)
	// UpdateResponsibility locks the row, lets fn change it, bumps the
	// epoch and cancels the pending wake-up (an older epoch never fires).
	UpdateResponsibility(ctx context.Context, tenantID, id uuid.UUID, fn func(*Responsibility) error) (Responsibility, error)
	DeleteResponsibility(ctx context.Context, tenantID, id uuid.UUID) error

	// OpenRun inserts an open run; a responsibility holds at most one
	// (fault.Conflict).
	OpenRun(ctx context.Context, r *Run) error
	// CloseRun closes an open run with the cost the runtime reported (nil:
	// not counted).
	CloseRun(ctx context.Context, tenantID, runID uuid.UUID, costCents *int64) (Run, error)
	// OpenRunOf returns the responsibility's open run, fault.NotFound when
	// none is open.
	OpenRunOf(ctx context.Context, tenantID, responsibilityID uuid.UUID) (Run, error)
	// RunByTask returns the run whose task is taskID.
	RunByTask(ctx context.Context, tenantID, taskID uuid.UUID) (Run, error)
	// Usage returns what the window [from, to) has used.
	Usage(ctx context.Context, tenantID, responsibilityID uuid.UUID, from, to time.Time) (Usage, error)

	// Arm locks the responsibility, asks plan for the wake-up to write
	// (plan refuses by returning an error) and inserts it. Concurrent
	// calls for one responsibility are serialized; the live-wake-up rule is
	// also enforced by a unique index.
	Arm(ctx context.Context, tenantID, responsibilityID uuid.UUID, plan func(Armer) (*Wakeup, error)) (Wakeup, error)
	// LiveWakeup returns the responsibility's pending wake-up,
	// fault.NotFound when none.
	LiveWakeup(ctx context.Context, tenantID, responsibilityID uuid.UUID) (Wakeup, error)
}
