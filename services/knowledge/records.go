package knowledge

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// ProfileInput is a user_profile_record call: what is known about a
// person the employee works with.
type ProfileInput struct {
	Agent string
	User  string // who the record is about
	Fact  string
	Facts []string
}

// RecordProfile stores a profile memory about in.User.
func (s *Service) RecordProfile(ctx context.Context, p identity.Principal, callID uuid.UUID, in ProfileInput) (Memory, error) {
	if err := checkText("user", in.User, 1, MaxSubject); err != nil {
		return Memory{}, err
	}
	return s.put(ctx, p, callID, NewMemory{Agent: in.Agent, Layer: Profile, Subject: strings.TrimSpace(in.User),
		Content: in.Fact, Facts: in.Facts}, MsgForgotten)
}

// DecisionInput is a decision_resolve call: a choice that was made.
type DecisionInput struct {
	Agent     string
	Question  string
	Choice    string
	Rationale string
	Parents   []string
}

// Resolve stores a decision memory: the question as its subject, the
// choice as its key fact.
func (s *Service) Resolve(ctx context.Context, p identity.Principal, callID uuid.UUID, in DecisionInput) (Memory, error) {
	if err := checkText("question", in.Question, 1, MaxSubject); err != nil {
		return Memory{}, err
	}
	if err := checkText("choice", in.Choice, 1, MaxFact); err != nil {
		return Memory{}, err
	}
	content := "Decision: " + strings.TrimSpace(in.Choice)
	if r := strings.TrimSpace(in.Rationale); r != "" {
		content += "\nRationale: " + r
	}
	return s.put(ctx, p, callID, NewMemory{Agent: in.Agent, Layer: Decision, Subject: strings.TrimSpace(in.Question),
		Content: content, Facts: []string{in.Choice}, Parents: in.Parents}, MsgDecisionForgotten)
}
