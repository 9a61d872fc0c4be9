package board

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// MaxReminderDelay is how far ahead a reminder may be set.
const MaxReminderDelay = 366 * 24 * time.Hour

// NewReminder is a create_reminder.
type NewReminder struct {
	Agent uuid.UUID // uuid.Nil means the calling employee
	Text  string
	DueAt time.Time
	Task  uuid.UUID // optional: the task the reminder's round works on
}

// CreateReminder sets a reminder. One for another employee needs a
// delegation relationship with it. Errors: Invalid (text, time), NotFound
// (agent, task), relationship refusals.
func (s *Service) CreateReminder(ctx context.Context, a Actor, in NewReminder) (Reminder, error) {
	if in.Agent == uuid.Nil {
		in.Agent = a.me()
	}
	if in.Agent == uuid.Nil {
		return Reminder{}, fault.New(fault.Invalid, "agent_id is required: a reminder wakes an AI employee")
	}
	if err := checkText("text", in.Text, 1, maxReason); err != nil {
		return Reminder{}, err
	}
	now := s.now()
	if in.DueAt.Before(now.Add(-time.Second)) || in.DueAt.After(now.Add(MaxReminderDelay)) {
		return Reminder{}, fault.New(fault.Invalid, "the reminder's time must be in the future and at most 366 days ahead")
	}
	if in.Agent != a.me() {
		if err := s.mayActFor(ctx, a, in.Agent, "create_reminder for another AI employee"); err != nil {
			return Reminder{}, err
		}
	}
	if _, err := s.activeAgent(ctx, a.Tenant.ID, in.Agent); err != nil {
		return Reminder{}, err
	}
	if in.Task != uuid.Nil {
		if _, err := s.task(ctx, a, in.Task); err != nil {
			return Reminder{}, err
		}
	}
	r := Reminder{ID: uuid.New(), TenantID: a.Tenant.ID, AgentID: in.Agent, TaskID: in.Task, Text: in.Text, DueAt: in.DueAt.UTC(),
		CreatorKind: a.creatorKind(), CreatorAgentID: a.me(), CreatedBy: a.Principal.ID()}
	return r, s.store.CreateReminder(ctx, &r)
}

// reminderRun is what a reminder writes when it falls due: a wake-up on its
// task, or on a task made for it, with its text as data.
func (s *Service) reminderRun(r Reminder) Run {
	data := rounds.Data{Label: "reminder set by " + r.CreatedBy, Author: r.CreatedBy, Text: r.Text}
	if r.TaskID != uuid.Nil {
		w := rounds.New(r.TenantID, r.AgentID, r.TaskID, rounds.Reminder, data)
		w.DueAt = r.DueAt
		return Run{Wakeup: w}
	}
	t := Task{ID: uuid.New(), TenantID: r.TenantID, Kind: KindTask, Title: "Reminder", Description: "See the reminder in this round's data.",
		Status: Open, AssigneeID: r.AgentID, CreatorKind: BySystem, CreatedBy: "reminder:" + r.ID.String(), Origin: FromReminder,
		OriginID: r.ID, Tags: []string{}}
	w := rounds.New(r.TenantID, r.AgentID, t.ID, rounds.Reminder, data)
	w.DueAt = r.DueAt
	return Run{Task: &t, Wakeup: w}
}

// CancelReminder cancels a pending reminder the caller may act on (the
// employee it wakes, or one related to it). Errors: NotFound, Conflict
// for one already fired or cancelled, relationship refusals.
func (s *Service) CancelReminder(ctx context.Context, a Actor, id uuid.UUID) (Reminder, error) {
	r, err := s.store.Reminder(ctx, a.Tenant.ID, id)
	if fault.Is(err, fault.NotFound) {
		return r, fault.New(fault.NotFound, "no reminder has id %s", id)
	}
	if err != nil {
		return r, err
	}
	if err := s.mayActFor(ctx, a, r.AgentID, "cancelling a reminder of another AI employee"); err != nil {
		return Reminder{}, err
	}
	return s.store.CancelReminder(ctx, a.Tenant.ID, id)
}
