package knowledge

import (
	"context"
	"fmt"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

func (svc *Service) registerRecords(reg *tools.Registry, agentParam tools.Param) {
	reg.Register(tools.Tool{
		Name:        "user_profile_record",
		Description: "Record something about a person you work with (a preference, role, habit) as a profile memory. Its source comes from your credential.",
		Params: []tools.Param{
			{Name: "user", Type: "string", Required: true, Description: "Who it is about: a name or handle (at most 400 bytes)."},
			{Name: "fact", Type: "string", Required: true, Description: "What is true of them (at most 16 KiB)."},
			{Name: "key_facts", Type: "array", Description: "Up to 20 short facts (strings)."},
			agentParam,
		},
		Scope: identity.ScopeToolsWrite, Family: family,
		Annotations: tools.Annotations{Title: "Record a user profile fact"},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			facts, err := strs(c.Args, "key_facts")
			if err != nil {
				return nil, err
			}
			m, err := svc.RecordProfile(ctx, c.Principal(), c.ID, ProfileInput{Agent: str(c.Args, "agent"), User: str(c.Args, "user"),
				Fact: str(c.Args, "fact"), Facts: facts})
			if err != nil {
				return nil, err
			}
			return stored(m), nil
		},
	})
	reg.Register(tools.Tool{
		Name:        "decision_resolve",
		Description: "Record a decision: the question, the choice made and why. Stored as a decision memory; refused if its source was forgotten by the operator.",
		Params: []tools.Param{
			{Name: "question", Type: "string", Required: true, Description: "What was being decided (at most 400 bytes)."},
			{Name: "choice", Type: "string", Required: true, Description: "What was chosen (at most 1000 bytes)."},
			{Name: "rationale", Type: "string", Description: "Why."},
			{Name: "parents", Type: "array", Description: "Ids of memories the decision rests on; refused if one does not exist."},
			agentParam,
		},
		Scope: identity.ScopeToolsWrite, Family: family,
		Annotations: tools.Annotations{Title: "Record a decision"},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			parents, err := strs(c.Args, "parents")
			if err != nil {
				return nil, err
			}
			m, err := svc.Resolve(ctx, c.Principal(), c.ID, DecisionInput{Agent: str(c.Args, "agent"), Question: str(c.Args, "question"),
				Choice: str(c.Args, "choice"), Rationale: str(c.Args, "rationale"), Parents: parents})
			if err != nil {
				return nil, err
			}
			return &tools.Result{Text: fmt.Sprintf("Resolved: decision %s recorded from source %s.", m.ID, m.Source.Key),
				Structured: map[string]any{"id": m.ID, "layer": m.Layer, "source": m.Source}}, nil
		},
	})
}
