package board

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
)

// Handoff hands a task to another employee with a TaskPacket: the receiver
// becomes the assignee and is woken with the packet as data. The packet is
// checked first and refused whole when malformed or too large. Errors:
// Invalid/TooLarge for the packet, NotFound, Conflict for a finished task,
// relationship refusals as for tasks_update (mayMove).
func (s *Service) Handoff(ctx context.Context, a Actor, id, to uuid.UUID, raw string) (Task, error) {
	packet, err := ParsePacket(raw)
	if err != nil {
		return Task{}, err
	}
	snap, err := s.task(ctx, a, id)
	if err != nil {
		return Task{}, err
	}
	if err := s.mayMove(ctx, a, snap, to, "team_handoff"); err != nil {
		return Task{}, err
	}
	receiver, err := s.activeAgent(ctx, a.Tenant.ID, to)
	if err != nil {
		return Task{}, err
	}
	before, after, err := s.mutate(ctx, a, snap, func(t *Task) (Effects, error) {
		if t.Status.Terminal() {
			return Effects{}, fault.New(fault.Conflict, "task %s is %s and cannot be handed off", t.ID, t.Status)
		}
		t.AssigneeID, t.ClaimerID, t.Status, t.BlockedReason = receiver.ID, uuid.Nil, Open, ""
		e := s.entry(a, t.ID, HandedOff, receiver.ID.String())
		e.Packet = &packet
		data := rounds.Data{Label: "hand-off packet (TaskPacket JSON) from " + s.who(a), Author: a.Principal.ID(), Text: raw}
		return Effects{Activity: []Activity{e}, Wakeups: []rounds.Wakeup{rounds.New(t.TenantID, receiver.ID, t.ID, rounds.Handoff, data)}}, nil
	})
	if err != nil {
		return Task{}, err
	}
	s.after(ctx, before, after)
	return after, nil
}

// who names the actor for a label: the employee's name, or its kind.
func (s *Service) who(a Actor) string {
	if a.Agent != nil {
		return "AI employee " + a.Agent.Name
	}
	return string(a.Principal.Kind) + " " + a.Principal.ID()
}

// maxMessage caps a message between employees.
const maxMessage = 4000

// Message sends text to another employee as a round: a task assigned to
// the recipient carries it (not a sub-task), optionally under parent, and
// wakes the recipient with the text as data.
func (s *Service) Message(ctx context.Context, a Actor, to uuid.UUID, text string, parent uuid.UUID) (Task, error) {
	if err := checkText("message", text, 1, maxMessage); err != nil {
		return Task{}, err
	}
	receiver, err := s.activeAgent(ctx, a.Tenant.ID, to)
	if err != nil {
		return Task{}, err
	}
	if receiver.ID == a.me() {
		return Task{}, fault.New(fault.Invalid, "a message goes to another AI employee, not to yourself")
	}
	in := NewTask{Kind: KindTask, Title: "Message from " + s.who(a), Assignee: receiver.ID}
	if parent != uuid.Nil {
		if err := s.checkParent(ctx, a, parent); err != nil {
			return Task{}, err
		}
		in.Parent, in.ParentGiven = parent, true
	}
	t := s.newTask(a, in, FromMessage, uuid.Nil)
	t.Description = "See the message in this round's data."
	data := rounds.Data{Label: "message from " + s.who(a), Author: a.Principal.ID(), Text: text}
	fx := Effects{Activity: []Activity{s.entry(a, t.ID, Comment, text)},
		Wakeups: []rounds.Wakeup{rounds.New(t.TenantID, receiver.ID, t.ID, rounds.Message, data)}}
	if err := s.store.CreateTask(ctx, &t, fx, 0); err != nil {
		return Task{}, err
	}
	return t, nil
}

// Spawn creates an ephemeral AI employee for one task and hands it the
// task: it reports to the caller, shares its department, holds at least
// the caller's restrictions, may not create agents, change its own skills
// or schedule tasks, and is retired when the task ends. name may be empty
// (one is made up).
func (s *Service) Spawn(ctx context.Context, a Actor, taskID uuid.UUID, name, role string) (identity.Agent, Task, error) {
	snap, err := s.task(ctx, a, taskID)
	if err != nil {
		return identity.Agent{}, Task{}, err
	}
	// The spawned employee reports to the caller: the task becomes the
	// caller's, as if it took it.
	if err := s.mayMove(ctx, a, snap, a.me(), "spawn_agent"); err != nil {
		return identity.Agent{}, Task{}, err
	}
	if snap.Status.Terminal() {
		return identity.Agent{}, Task{}, fault.New(fault.Conflict, "task %s is %s; spawn an employee only for unfinished work", snap.ID, snap.Status)
	}
	agent, err := s.staff.CreateAgent(ctx, a.Tenant.ID, s.ephemeral(a, name, role))
	if err != nil {
		return identity.Agent{}, Task{}, err
	}
	t, err := s.assignSpawned(ctx, a, snap, agent)
	if err != nil {
		if _, terr := s.staff.TrashAgent(context.WithoutCancel(ctx), a.Tenant.ID, agent.ID); terr != nil {
			s.log.ErrorContext(ctx, "retire a spawned employee after a failed spawn", "agent", agent.ID, "err", terr)
		}
		return identity.Agent{}, Task{}, err
	}
	return agent, t, nil
}

func (s *Service) ephemeral(a Actor, name, role string) identity.NewAgent {
	no := false
	if name == "" {
		name = fmt.Sprintf("ephemeral-%s", uuid.NewString()[:8])
	}
	if role == "" {
		role = "ephemeral"
	}
	in := identity.NewAgent{Name: name, Role: role, Settings: identity.AgentSettings{Permissions: &identity.Permissions{
		CanCreateAgents: &no, CanModifyOwnSkills: &no, CanScheduleTasks: &no}}}
	if a.Agent != nil {
		// Bounded by its creator: its department, under it, with at least
		// its restrictions (identity.Agent.Bound).
		in.Department, in.ReportsTo, in.Creator = a.Agent.Department, a.Agent.ID, a.Agent.ID
	}
	return in
}

func (s *Service) assignSpawned(ctx context.Context, a Actor, snap Task, agent identity.Agent) (Task, error) {
	if err := s.store.RecordSpawn(ctx, a.Tenant.ID, agent.ID, snap.ID, a.Principal.ID()); err != nil {
		return Task{}, err
	}
	before, after, err := s.mutate(ctx, a, snap, func(t *Task) (Effects, error) {
		if t.Status.Terminal() {
			return Effects{}, fault.New(fault.Conflict, "task %s finished while the employee was being spawned", t.ID)
		}
		t.AssigneeID, t.ClaimerID = agent.ID, uuid.Nil
		return Effects{Activity: []Activity{s.entry(a, t.ID, AssignedTo, agent.ID.String())},
			Wakeups: []rounds.Wakeup{rounds.New(t.TenantID, agent.ID, t.ID, rounds.Assigned)}}, nil
	})
	if err != nil {
		return Task{}, err
	}
	s.after(ctx, before, after)
	return after, nil
}

// retireSpawned moves the employees spawned for a finished task to the
// trash.
func (s *Service) retireSpawned(ctx context.Context, t Task) {
	ids, err := s.store.SpawnedFor(ctx, t.TenantID, t.ID)
	if err != nil {
		s.log.ErrorContext(ctx, "list the employees spawned for a task", "task", t.ID, "err", err)
		return
	}
	for _, id := range ids {
		if _, err := s.staff.TrashAgent(ctx, t.TenantID, id); err != nil && !fault.Is(err, fault.NotFound) && !fault.Is(err, fault.Conflict) {
			s.log.ErrorContext(ctx, "retire a spawned employee", "agent", id, "err", err)
			continue
		}
		if err := s.store.Retire(ctx, t.TenantID, id); err != nil {
			s.log.ErrorContext(ctx, "mark a spawned employee retired", "agent", id, "err", err)
		}
	}
}
