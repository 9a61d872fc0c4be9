package knowledge

import (
	"context"
	"fmt"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

func (svc *Service) registerHandoff(reg *tools.Registry) {
	task := tools.Param{Name: "task", Type: "string", Description: "The task id; only outside a round (a round's task is its own)."}
	reg.Register(tools.Tool{
		Name:        "working_state_handoff",
		Description: "Leave your next round on this task a hand-off: a plain note (cut at ~1,200 chars) or, with status, a checked one. Over 16,384 bytes it is rejected whole, never truncated.",
		Params: []tools.Param{
			{Name: "status", Type: "string", Description: "continue (needs next_steps, no blocker), complete (needs evidence, no blocker or next_steps) or blocked (needs a specific blocker)."},
			{Name: "note", Type: "string", Description: "Free text. Without status this is the whole hand-off."},
			{Name: "next_steps", Type: "array", Description: "What to do next (strings)."},
			{Name: "evidence", Type: "array", Description: "What shows the work is done: links, ids, test results (strings)."},
			{Name: "blocker", Type: "string", Description: "What blocks the work, specifically, and what would unblock it."},
			task,
		},
		Scope: identity.ScopeToolsWrite, Family: family, ProcessAgent: true,
		Annotations: tools.Annotations{Title: "Hand off working state"},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			var in HandoffInput
			var err error
			if in.NextSteps, err = strs(c.Args, "next_steps"); err != nil {
				return nil, err
			}
			if in.Evidence, err = strs(c.Args, "evidence"); err != nil {
				return nil, err
			}
			in.Task, in.Status, in.Note, in.Blocker = str(c.Args, "task"), Status(str(c.Args, "status")), str(c.Args, "note"), str(c.Args, "blocker")
			h, err := svc.Handoff(ctx, c.Principal(), c.ID, in)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("Hand-off stored for task %s (%d bytes); your next round on it receives it as data.", h.TaskID, h.Bytes)
			if h.Truncated {
				text += fmt.Sprintf(" The plain note was cut at %d characters.", PlainNoteChars)
			}
			return &tools.Result{Text: text, Structured: map[string]any{"task_id": h.TaskID, "status": h.Status, "bytes": h.Bytes,
				"truncated": h.Truncated, "source": h.Source}}, nil
		},
	})
	reg.Register(tools.Tool{
		Name:        "working_state_get",
		Description: "Read your newest hand-off on this task, fenced as data with injection flags.",
		Params:      []tools.Param{task},
		Scope:       identity.ScopeToolsRead, Family: family, ProcessAgent: true,
		Annotations: tools.Annotations{Title: "Read your hand-off", ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			h, err := svc.ReadHandoff(ctx, c.Principal(), str(c.Args, "task"))
			if fault.Is(err, fault.NotFound) {
				return &tools.Result{Text: "No hand-off on this task yet.", Structured: map[string]any{"handoff": nil}}, nil
			}
			if err != nil {
				return nil, err
			}
			text := h.Text()
			flags := Scan(text)
			return &tools.Result{Text: Fence("handoff", text, flags, "task", h.TaskID.String(), "source", h.Source.Key),
				Structured: map[string]any{"handoff": h, "injection_flags": flags}}, nil
		},
	})
}
