package board

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// NewRoutine is a tasks_create with a schedule.
type NewRoutine struct {
	Name        string
	Schedule    string
	Agent       uuid.UUID // runs as; uuid.Nil means the calling employee
	Description string
	Tags        []string
}

// CreateRoutine creates a routine. It runs as Agent, which must be the
// calling employee or one it has a delegation relationship with.
func (s *Service) CreateRoutine(ctx context.Context, a Actor, in NewRoutine) (Routine, error) {
	if in.Agent == uuid.Nil {
		in.Agent = a.me()
	}
	if in.Agent == uuid.Nil {
		return Routine{}, fault.New(fault.Invalid, "assignee is required: a routine runs as an AI employee")
	}
	if err := s.checkRoutine(a, in.Name, in.Description, in.Tags, nil); err != nil {
		return Routine{}, err
	}
	next, err := NextRun(in.Schedule, a.Tenant.Settings.TimeZone, s.now())
	if err != nil {
		return Routine{}, err
	}
	if err := s.mayActFor(ctx, a, in.Agent, "a routine that runs as another AI employee"); err != nil {
		return Routine{}, err
	}
	if _, err := s.activeAgent(ctx, a.Tenant.ID, in.Agent); err != nil {
		return Routine{}, err
	}
	r := Routine{ID: uuid.New(), TenantID: a.Tenant.ID, Name: strings.TrimSpace(in.Name), Schedule: strings.TrimSpace(in.Schedule),
		AgentID: in.Agent, Description: in.Description, Tags: in.Tags, NextRunAt: &next, CreatorKind: a.creatorKind(),
		CreatorAgentID: a.me(), CreatedBy: a.Principal.ID()}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	return r, s.store.CreateRoutine(ctx, &r)
}

func (s *Service) checkRoutine(a Actor, name, description string, tags, old []string) error {
	for _, err := range []error{checkText("title", name, 1, maxTitle), checkText("description", description, 0, maxDescription), checkTags(tags)} {
		if err != nil {
			return err
		}
	}
	return checkProtectedTags(a, old, tags)
}

// Routine finds a routine by id or by name. A name shared by several
// routines is refused with the candidate ids, so a call acts on exactly one.
func (s *Service) Routine(ctx context.Context, a Actor, ref string) (Routine, error) {
	ref = strings.TrimSpace(ref)
	if id, err := uuid.Parse(ref); err == nil {
		r, err := s.store.Routine(ctx, a.Tenant.ID, id)
		if fault.Is(err, fault.NotFound) {
			return r, fault.New(fault.NotFound, "no routine has id %s", id)
		}
		return r, err
	}
	rs, err := s.store.RoutinesNamed(ctx, a.Tenant.ID, ref)
	switch {
	case err != nil:
		return Routine{}, err
	case len(rs) == 0:
		return Routine{}, fault.New(fault.NotFound, "no routine is named %q", ref)
	case len(rs) > 1:
		ids := make([]string, len(rs))
		for i, r := range rs {
			ids[i] = r.ID.String()
		}
		return Routine{}, fault.New(fault.Conflict, "%d routines are named %q; address one by id: %s", len(rs), ref, strings.Join(ids, ", "))
	}
	return rs[0], nil
}

// RoutineChange is an update_cron_task: nil fields stay as they are.
type RoutineChange struct {
	Name        *string
	Schedule    *string
	Description *string
	Tags        *[]string
	Agent       *uuid.UUID
	// Paused pauses or resumes it in the same change.
	Paused *bool
}

// UpdateRoutine changes a routine the caller may act on, in one
// transaction; its next run is computed again from now (none while
// paused).
func (s *Service) UpdateRoutine(ctx context.Context, a Actor, ref string, c RoutineChange) (Routine, error) {
	r, err := s.routineFor(ctx, a, ref, "update_cron_task")
	if err != nil {
		return Routine{}, err
	}
	if c.Agent != nil && *c.Agent != r.AgentID {
		if err := s.mayActFor(ctx, a, *c.Agent, "update_cron_task to run as another AI employee"); err != nil {
			return Routine{}, err
		}
		if _, err := s.activeAgent(ctx, a.Tenant.ID, *c.Agent); err != nil {
			return Routine{}, err
		}
	}
	next := r
	set(&next.Name, c.Name)
	set(&next.Schedule, c.Schedule)
	set(&next.Description, c.Description)
	set(&next.Tags, c.Tags)
	set(&next.AgentID, c.Agent)
	set(&next.Paused, c.Paused)
	if err := s.checkRoutine(a, next.Name, next.Description, next.Tags, r.Tags); err != nil {
		return Routine{}, err
	}
	if _, err := ParseSchedule(next.Schedule); err != nil {
		return Routine{}, err
	}
	return s.store.UpdateRoutine(ctx, a.Tenant.ID, r.ID, func(cur *Routine, tz string) error {
		if cur.AgentID != r.AgentID {
			return fault.New(fault.Conflict, "routine %s changed while this call ran; retry", r.ID)
		}
		cur.Name, cur.Schedule, cur.Description, cur.Tags, cur.AgentID = next.Name, next.Schedule, next.Description, next.Tags, next.AgentID
		cur.Paused = next.Paused
		return s.reschedule(cur, tz)
	})
}

// reschedule sets a routine's next run from now (none while paused).
func (s *Service) reschedule(r *Routine, tz string) error {
	r.NextRunAt = nil
	if r.Paused {
		return nil
	}
	next, err := NextRun(r.Schedule, tz, s.now())
	if err == nil {
		r.NextRunAt = &next
	}
	return err
}

// routineFor resolves ref and checks the caller may act on the routine.
func (s *Service) routineFor(ctx context.Context, a Actor, ref, what string) (Routine, error) {
	r, err := s.Routine(ctx, a, ref)
	if err != nil {
		return Routine{}, err
	}
	return r, s.mayActFor(ctx, a, r.AgentID, what)
}

// DeleteRoutine deletes a routine; tasks of its past runs stay.
func (s *Service) DeleteRoutine(ctx context.Context, a Actor, ref string) (Routine, error) {
	r, err := s.routineFor(ctx, a, ref, "delete_cron_task")
	if err != nil {
		return Routine{}, err
	}
	return r, s.store.DeleteRoutine(ctx, a.Tenant.ID, r.ID)
}

// PauseRoutine pauses (or, with paused false, resumes) a routine.
func (s *Service) PauseRoutine(ctx context.Context, a Actor, ref string, paused bool) (Routine, error) {
	r, err := s.routineFor(ctx, a, ref, "pause_cron_task")
	if err != nil {
		return Routine{}, err
	}
	return s.store.UpdateRoutine(ctx, a.Tenant.ID, r.ID, func(cur *Routine, tz string) error {
		if cur.Paused == paused {
			return nil
		}
		cur.Paused = paused
		return s.reschedule(cur, tz)
	})
}

// RunRoutine runs a routine once, now: a task and one round of the
// employee it runs as. Its schedule is unchanged.
func (s *Service) RunRoutine(ctx context.Context, a Actor, ref string) (Run, error) {
	r, err := s.routineFor(ctx, a, ref, "run_cron_task")
	if err != nil {
		return Run{}, err
	}
	return s.store.RunRoutine(ctx, a.Tenant.ID, r.ID, func(r Routine, _ string) (Run, error) { return s.routineRun(r), nil })
}

// routineRun is the task and wake-up of one run of r.
func (s *Service) routineRun(r Routine) Run {
	t := Task{ID: uuid.New(), TenantID: r.TenantID, Kind: KindTask, Title: r.Name, Description: r.Description, Status: Open,
		AssigneeID: r.AgentID, CreatorKind: BySystem, CreatedBy: "routine:" + r.ID.String(), Origin: FromRoutine, OriginID: r.ID, Tags: r.Tags}
	if t.Tags == nil {
		t.Tags = []string{}
	}
	w := rounds.New(r.TenantID, r.AgentID, t.ID, rounds.Routine)
	if r.NextRunAt != nil && !r.NextRunAt.After(s.now()) {
		w.DueAt = *r.NextRunAt // the slot it ran for; a run by hand is due when written
	}
	if r.Description != "" {
		w.Data = []rounds.Data{{Label: "routine description, written by " + r.CreatedBy, Author: r.CreatedBy, Text: r.Description}}
	}
	return Run{Task: &t, Wakeup: w}
}

// FireDue runs every routine and reminder that is due, in every tenant,
// at most limit of each, and returns the runs written. The worker's
// dispatcher calls it several times a second; any number of workers may.
func (s *Service) FireDue(ctx context.Context, limit int) ([]Run, error) {
	now := s.now()
	runs, err := s.store.FireDueRoutines(ctx, now, limit, func(r Routine, tz string) (Run, *time.Time, error) {
		next, err := NextRun(r.Schedule, tz, now)
		if err != nil {
			return s.routineRun(r), nil, nil // a schedule that no longer parses stops
		}
		return s.routineRun(r), &next, nil
	})
	if err != nil {
		return runs, fmt.Errorf("fire due routines: %w", err)
	}
	more, err := s.store.FireDueReminders(ctx, now, limit, func(r Reminder) (Run, error) { return s.reminderRun(r), nil })
	if err != nil {
		return append(runs, more...), fmt.Errorf("fire due reminders: %w", err)
	}
	return append(runs, more...), nil
}
