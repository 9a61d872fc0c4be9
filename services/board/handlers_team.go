package board

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

func routineResult(verb string, r Routine) *tools.Result {
	text := fmt.Sprintf("%s routine %s %q (%s", verb, r.ID, r.Name, r.Schedule)
	switch {
	case r.Paused:
		text += ", paused"
	case r.NextRunAt != nil:
		text += ", next run " + r.NextRunAt.Format(time.RFC3339)
	}
	return &tools.Result{Text: text + ").", Structured: r}
}

func (s *Service) toolUpdateRoutine(ctx context.Context, c tools.Call) (*tools.Result, error) {
	ch := RoutineChange{Name: strArg(c.Args, "title"), Schedule: strArg(c.Args, "schedule"), Description: strArg(c.Args, "description")}
	var err error
	if ch.Tags, err = tagsArg(c.Args); err != nil {
		return nil, err
	}
	if ch.Agent, err = s.agentArg(ctx, c, "assignee"); err != nil {
		return nil, err
	}
	if ch.Agent != nil && *ch.Agent == uuid.Nil {
		return nil, fault.New(fault.Invalid, "a routine always runs as an AI employee; name one in assignee")
	}
	r, err := s.UpdateRoutine(ctx, ActorOf(c.Subject), deref(strArg(c.Args, "routine")), ch)
	if err != nil {
		return nil, err
	}
	return routineResult("Updated", r), nil
}

func (s *Service) toolDeleteRoutine(ctx context.Context, c tools.Call) (*tools.Result, error) {
	r, err := s.DeleteRoutine(ctx, ActorOf(c.Subject), deref(strArg(c.Args, "routine")))
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Deleted routine %s %q.", r.ID, r.Name), Structured: map[string]any{"id": r.ID, "deleted": true}}, nil
}

func (s *Service) toolPauseRoutine(ctx context.Context, c tools.Call) (*tools.Result, error) {
	paused := true
	if v, ok := c.Args["paused"].(bool); ok {
		paused = v
	}
	r, err := s.PauseRoutine(ctx, ActorOf(c.Subject), deref(strArg(c.Args, "routine")), paused)
	if err != nil {
		return nil, err
	}
	verb := "Paused"
	if !paused {
		verb = "Resumed"
	}
	return routineResult(verb, r), nil
}

func (s *Service) toolRunRoutine(ctx context.Context, c tools.Call) (*tools.Result, error) {
	run, err := s.RunRoutine(ctx, ActorOf(c.Subject), deref(strArg(c.Args, "routine")))
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Started a run of the routine: task %s, wake-up %s.", run.Task.ID, run.Wakeup.ID),
		Structured: map[string]any{"task": run.Task, "wakeup_id": run.Wakeup.ID}}, nil
}

func (s *Service) toolReminder(ctx context.Context, c tools.Call) (*tools.Result, error) {
	in := NewReminder{Text: deref(strArg(c.Args, "text"))}
	at, hasAt := tools.String(c.Args, "at")
	secs, hasIn := tools.Int(c.Args, "in_seconds")
	switch {
	case hasAt == hasIn:
		return nil, fault.New(fault.Invalid, "give exactly one of at (RFC 3339) and in_seconds")
	case hasAt:
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(at))
		if err != nil {
			return nil, fault.New(fault.Invalid, "at must be an RFC 3339 time such as 2026-05-01T09:00:00Z")
		}
		in.DueAt = t
	default:
		if secs < 1 || secs > int64(MaxReminderDelay.Seconds()) {
			return nil, fault.New(fault.Invalid, "in_seconds must be 1-%d", int64(MaxReminderDelay.Seconds()))
		}
		in.DueAt = s.now().Add(time.Duration(secs) * time.Second)
	}
	who, err := s.agentArg(ctx, c, "agent")
	if err != nil {
		return nil, err
	}
	if who != nil {
		in.Agent = *who
	}
	if in.Task, _, err = idArg(c.Args, "task_id"); err != nil {
		return nil, err
	}
	r, err := s.CreateReminder(ctx, ActorOf(c.Subject), in)
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Reminder %s set for %s.", r.ID, r.DueAt.Format(time.RFC3339)), Structured: r}, nil
}

func (s *Service) toolHandoff(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	to, err := s.agentNamed(ctx, c.Subject.Tenant.ID, strings.TrimSpace(deref(strArg(c.Args, "to"))))
	if err != nil {
		return nil, err
	}
	t, err := s.Handoff(ctx, ActorOf(c.Subject), id, to.ID, deref(strArg(c.Args, "packet")))
	if err != nil {
		return nil, err
	}
	return s.taskResult(ctx, "Handed off", t), nil
}

func (s *Service) toolMessage(ctx context.Context, c tools.Call) (*tools.Result, error) {
	to, err := s.agentNamed(ctx, c.Subject.Tenant.ID, strings.TrimSpace(deref(strArg(c.Args, "to"))))
	if err != nil {
		return nil, err
	}
	parent, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	t, err := s.Message(ctx, ActorOf(c.Subject), to.ID, deref(strArg(c.Args, "message")), parent)
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Sent to %s; it arrives as a round on task %s.", to.Name, t.ID),
		Structured: map[string]any{"task_id": t.ID, "to": to.Name}}, nil
}

func (s *Service) toolSpawn(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	agent, t, err := s.Spawn(ctx, ActorOf(c.Subject), id, strings.TrimSpace(deref(strArg(c.Args, "name"))), deref(strArg(c.Args, "role")))
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Spawned AI employee %s for task %s; it retires when the task ends.", agent.Name, t.ID),
		Structured: map[string]any{"agent": agent.Name, "agent_id": agent.ID, "task_id": t.ID}}, nil
}
