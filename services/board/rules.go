package board

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Actor is the caller of a board operation, as the record relationship
// rules see it.
type Actor struct {
	Principal identity.Principal
	Tenant    identity.Tenant
	// Agent is the calling AI employee; nil for every other caller.
	Agent *identity.Agent
	// MCP is true for calls through the MCP endpoint, where
	// acceptance_criteria is refused to every caller.
	MCP bool
}

// ActorOf returns the actor of an MCP call.
func ActorOf(sub *tools.Subject) Actor {
	return Actor{Principal: sub.Principal, Tenant: sub.Tenant, Agent: sub.Agent, MCP: true}
}

// Operator returns an actor for the admin API's operator p.
func Operator(p identity.Principal, t identity.Tenant) Actor {
	return Actor{Principal: p, Tenant: t}
}

// unrestricted reports whether the actor is an operator: no record
// relationship rule applies to it.
func (a Actor) unrestricted() bool { return a.Principal.Kind == identity.KindOperator }

func (a Actor) me() uuid.UUID {
	if a.Agent != nil {
		return a.Agent.ID
	}
	return uuid.Nil
}

func (a Actor) creatorKind() CreatorKind {
	switch {
	case a.Agent != nil:
		return ByEmployee
	case a.Principal.Kind == identity.KindExternal:
		return ByExternal
	}
	return ByOperator
}

// Relations is the delegation policy (agents.Delegation): whether one AI
// employee may act on another's records.
type Relations interface {
	Related(ctx context.Context, policy identity.DelegationPolicy, tenantID, caller, target uuid.UUID) (bool, error)
}

// refuse is a listed-but-refused record relationship refusal: JSON-RPC
// -32003 with a relationship_refused audit event.
func refuse(format string, args ...any) error {
	return tools.Refused(tools.EventRelationshipRefused, fmt.Sprintf(format, args...))
}

// owner returns the caller's AI employee, refusing every principal that
// owns no record on the board (anything but an AI employee).
func (a Actor) owner(what string) (uuid.UUID, error) {
	if a.Agent == nil {
		return uuid.Nil, refuse("%s is refused: this caller is not an AI employee, owns no record on the board, and is refused on every record relationship check", what)
	}
	return a.Agent.ID, nil
}

// related reports whether the actor's employee may act on target's records.
func (s *Service) related(ctx context.Context, a Actor, target uuid.UUID) (bool, error) {
	return s.rel.Related(ctx, a.Tenant.Settings.Delegation, a.Tenant.ID, a.me(), target)
}

// mayTouch is the rule of tasks_update, activity_post and team_handoff
// (the last two through mayMove when the task changes hands):
// the task's assignee, claimer or creator, or a delegation relationship
// with its assignee; an unassigned, unclaimed task must be claimed first.
func (s *Service) mayTouch(ctx context.Context, a Actor, t Task, what string) error {
	if a.unrestricted() {
		return nil
	}
	me, err := a.owner(what)
	if err != nil {
		return err
	}
	if me == t.AssigneeID || me == t.ClaimerID || me == t.CreatorAgentID {
		return nil
	}
	return s.viaHolder(ctx, a, t, what)
}

// mayFinish is the rule of tasks_complete and tasks_block: the assignee or
// claimer, or a delegation relationship with the assignee.
func (s *Service) mayFinish(ctx context.Context, a Actor, t Task, what string) error {
	if a.unrestricted() {
		return nil
	}
	me, err := a.owner(what)
	if err != nil {
		return err
	}
	if me == t.AssigneeID || me == t.ClaimerID {
		return nil
	}
	return s.viaHolder(ctx, a, t, what)
}

// mayClaim: an unassigned task, one already the caller's, or a delegation
// relationship with its assignee.
func (s *Service) mayClaim(ctx context.Context, a Actor, t Task) error {
	me, err := a.owner("tasks_claim")
	if err != nil {
		return err
	}
	if t.AssigneeID == uuid.Nil || t.AssigneeID == me {
		return nil
	}
	return s.viaHolder(ctx, a, t, "tasks_claim")
}

// mayMove is the one rule of every tool that gives a task a new assignee
// (tasks_update's assignee, team_handoff, spawn_agent): the caller may
// touch the task (mayTouch), and a task that would become the caller's own
// (given to itself, or to an employee it spawns, which reports to it)
// needs a delegation relationship with the assignee it is taken from
// (mayTake). So a creator cannot take back work it gave an unrelated
// employee, whichever tool it tries.
func (s *Service) mayMove(ctx context.Context, a Actor, t Task, to uuid.UUID, what string) error {
	if err := s.mayTouch(ctx, a, t, what); err != nil {
		return err
	}
	if to != uuid.Nil && to == a.me() {
		return s.mayTake(ctx, a, t)
	}
	return nil
}

// mayTake refuses taking another employee's task for oneself without a
// delegation relationship with that employee, whatever else the caller is.
func (s *Service) mayTake(ctx context.Context, a Actor, t Task) error {
	if a.unrestricted() || t.AssigneeID == uuid.Nil || t.AssigneeID == a.me() {
		return nil
	}
	ok, err := s.related(ctx, a, t.AssigneeID)
	if err != nil || ok {
		return err
	}
	return refuse("taking task %s for yourself needs a delegation relationship (same department, reports_to above or below, or a whitelisted pair) with its assignee, and you have none", t.ID)
}

// viaHolder passes a caller related to the task's assignee (its claimer
// when it has no assignee); a task with neither must be claimed first.
func (s *Service) viaHolder(ctx context.Context, a Actor, t Task, what string) error {
	holder := t.AssigneeID
	if holder == uuid.Nil {
		holder = t.ClaimerID
	}
	if holder == uuid.Nil {
		return refuse("%s is refused: task %s is unassigned and unclaimed; claim it first with tasks_claim", what, t.ID)
	}
	ok, err := s.related(ctx, a, holder)
	if err != nil || ok {
		return err
	}
	return refuse("%s is refused: you are not the assignee, claimer or creator of task %s and have no delegation relationship (same department, reports_to above or below, or a whitelisted pair) with its assignee", what, t.ID)
}

// mayActFor is the rule of routines and reminders: the employee itself, or
// a delegation relationship with it.
func (s *Service) mayActFor(ctx context.Context, a Actor, agentID uuid.UUID, what string) error {
	if a.unrestricted() {
		return nil
	}
	me, err := a.owner(what)
	if err != nil || me == agentID {
		return err
	}
	ok, err := s.related(ctx, a, agentID)
	if err != nil || ok {
		return err
	}
	return refuse("%s is refused: it acts for another AI employee, and you have no delegation relationship (same department, reports_to above or below, or a whitelisted pair) with it", what)
}

// AutoResearchTag is the tag that marks a task for automatic research;
// like outcome: and grant: tags, only operators place it.
const AutoResearchTag = "auto-research"

// Protected reports whether only operators may add, remove or reorder tag.
func Protected(tag string) bool {
	return strings.HasPrefix(tag, "outcome:") || strings.HasPrefix(tag, "grant:") || tag == AutoResearchTag
}

func protectedOf(tags []string) []string {
	var out []string
	for _, t := range tags {
		if Protected(t) {
			out = append(out, t)
		}
	}
	return out
}

// checkProtectedTags refuses a non-operator whose new tag list adds,
// removes or reorders a protected tag relative to old.
func checkProtectedTags(a Actor, old, new []string) error {
	if a.unrestricted() || slices.Equal(protectedOf(old), protectedOf(new)) {
		return nil
	}
	return refuse("tags starting with outcome: or grant: and the %s tag are placed by operators; you cannot add, remove or reorder them", AutoResearchTag)
}
