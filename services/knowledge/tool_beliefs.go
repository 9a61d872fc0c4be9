package knowledge

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// SettleNote is what belief_settle says of a settlement that does not count.
const SettleNote = "Recorded as your own report (settle_source agent_unverified): it does not count toward calibration. Only a verified settlement does."

func (svc *Service) registerBeliefs(reg *tools.Registry) {
	reg.Register(tools.Tool{
		Name:        "belief_record",
		Description: "Record a belief: the probability (0-1) you give that a claim is true, for calibration once it is settled.",
		Params: []tools.Param{
			{Name: "subject", Type: "string", Required: true, Description: "What the belief is about, for grouping (at most 200 bytes)."},
			{Name: "claim", Type: "string", Required: true, Description: "The claim, checkable later (at most 2000 bytes)."},
			{Name: "probability", Type: "number", Required: true, Description: "Your probability that the claim is true, 0 to 1."},
		},
		Scope: identity.ScopeToolsWrite, Family: family, ProcessAgent: true,
		Annotations: tools.Annotations{Title: "Record a belief"},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			p, err := num(c.Args, "probability")
			if err != nil {
				return nil, err
			}
			b, err := svc.RecordBelief(ctx, c.Principal(), c.ID, str(c.Args, "subject"), str(c.Args, "claim"), p)
			if err != nil {
				return nil, err
			}
			return &tools.Result{Text: fmt.Sprintf("Belief %s recorded.", b.ID), Structured: b}, nil
		},
	})
	reg.Register(tools.Tool{
		Name:        "belief_settle",
		Description: "Say how one of your beliefs turned out. Recorded as self-reported (agent_unverified): it does not count toward calibration.",
		Params: []tools.Param{
			{Name: "belief_id", Type: "string", Required: true, Description: "The belief's id."},
			{Name: "outcome", Type: "boolean", Required: true, Description: "Whether the claim turned out true."},
		},
		Scope: identity.ScopeToolsWrite, Family: family, ProcessAgent: true, StringScalars: true,
		Annotations: tools.Annotations{Title: "Settle a belief"},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			id, err := uuid.Parse(str(c.Args, "belief_id"))
			if err != nil {
				return nil, fault.New(fault.Invalid, "belief_id must be a belief's id")
			}
			outcome, _ := c.Args["outcome"].(bool)
			b, err := svc.SettleOwn(ctx, c.Principal(), id, outcome)
			if err != nil {
				return nil, err
			}
			return SettledResult(b), nil
		},
	})
	reg.Register(tools.Tool{
		Name:        "belief_stats",
		Description: "Calibration of your beliefs: counts, calibration_status, verified scores (only from 30 verified settlements), self-reported counts, per subject.",
		Params: []tools.Param{
			{Name: "agent", Type: "string", Description: "The employee, by name or id: only for a caller that is not an AI employee."},
		},
		Scope: identity.ScopeToolsRead, Family: family,
		Annotations: tools.Annotations{Title: "Belief calibration", ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			st, err := svc.StatsFor(ctx, c.Principal(), str(c.Args, "agent"))
			if err != nil {
				return nil, err
			}
			return &tools.Result{Text: fmt.Sprintf("%s: %d submitted, %d settled (%d verified). %s", st.Status, st.NSubmitted, st.NSettledAll,
				st.Verified.N, st.Note), Structured: st}, nil
		},
	})
}

// SettledResult is belief_settle's answer: the row, whether it counts
// and, when it does not, why.
func SettledResult(b Belief) *tools.Result {
	out := map[string]any{"belief": b, "counts_toward_calibration": b.CountsTowardCalibration()}
	text := fmt.Sprintf("Belief %s settled (%s).", b.ID, b.SettleSource)
	if !b.CountsTowardCalibration() {
		out["note"] = SettleNote
		text += " " + SettleNote
	}
	return &tools.Result{Text: text, Structured: out}
}
