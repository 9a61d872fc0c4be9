package knowledge

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
)

// ReadHandoff returns p's newest hand-off on its round's task (or task).
func (s *Service) ReadHandoff(ctx context.Context, p identity.Principal, task string) (Handoff, error) {
	id := p.TaskID
	if task != "" {
		var err error
		if id, err = uuid.Parse(task); err != nil {
			return Handoff{}, fault.New(fault.Invalid, "task must be a task id")
		}
	}
	if !p.IsEmployee() || id == uuid.Nil {
		return Handoff{}, fault.New(fault.Invalid, "task is required outside a round")
	}
	return s.cfg.Store.Handoff(ctx, p.TenantID, p.AgentID, id)
}

// Text renders h for the next round.
func (h Handoff) Text() string {
	var b strings.Builder
	if h.Status != "" {
		b.WriteString("status: " + string(h.Status) + "\n")
	}
	if h.Note != "" {
		b.WriteString(h.Note + "\n")
	}
	list := func(name string, xs []string) {
		if len(xs) > 0 {
			b.WriteString(name + ":\n")
			for _, x := range xs {
				b.WriteString("- " + x + "\n")
			}
		}
	}
	list("next_steps", h.NextSteps)
	list("evidence", h.Evidence)
	if h.Blocker != "" {
		b.WriteString("blocker: " + h.Blocker + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// HandoffLabel labels a hand-off carried to the next round.
const HandoffLabel = "your hand-off from your previous round on this task"

// RoundNotes is the rounds' Notes seam: the employee's newest hand-off
// on the task, carried to its next round on it as data.
func (s *Service) RoundNotes(ctx context.Context, tenantID, agentID, taskID uuid.UUID) ([]rounds.Data, error) {
	h, err := s.cfg.Store.Handoff(ctx, tenantID, agentID, taskID)
	if fault.Is(err, fault.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []rounds.Data{{Label: HandoffLabel, Author: "agent:" + agentID.String(), Text: h.Text()}}, nil
}
