package responsibilities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

func ptr[T any](v T) *T { return &v }

var pID = tools.Param{Name: "responsibility_id", Type: "string", Required: true, Description: "Id of the responsibility."}

// Register declares the responsibility tools (catalog.Family). They are
// gated by the tenant's [responsibilities] enabled setting, which also
// keeps them from external clients.
func (s *Service) Register(reg *tools.Registry) {
	add := func(t tools.Tool) {
		t.Family, t.Gate, t.Scope = "responsibilities", tools.GateResponsibilities, identity.ScopeToolsAdmin
		reg.Register(t)
	}
	arm := tools.Annotations{Destructive: ptr(false), OpenWorld: ptr(false)}
	add(tools.Tool{Name: "responsibility_get", Handler: s.toolGet,
		Description: "Without responsibility_id: your responsibilities. With it: schedule, subscriptions, window runs and spend, open run, cost_not_counted. Others' read as not_found unless related.",
		Params:      []tools.Param{{Name: "responsibility_id", Type: "string", Description: "Id of one responsibility; omit to list yours."}},
		Annotations: tools.Annotations{Title: "Get responsibility", ReadOnly: true, OpenWorld: ptr(false)}})
	arm.Title = "Arm follow-up"
	// The two arming tools act for the calling employee inside its own run
	// (ProcessAgent): the policy hides them from every other caller, which
	// each call would refuse.
	add(tools.Tool{Name: "responsibility_followup", Handler: s.toolFollowup, ProcessAgent: true,
		Description: "Wake yourself once at due_at, from inside your open run of an active responsibility. Counts toward the window's limits; one live follow-up or question at a time; never moved.",
		Params: []tools.Param{pID,
			{Name: "due_at", Type: "string", Required: true, Description: "RFC 3339; at least min_wake_interval_secs from now, not after stop_at."}},
		Annotations: arm})
	arm.Title = "Ask operator"
	add(tools.Tool{Name: "responsibility_ask", Handler: s.toolAsk, ProcessAgent: true,
		Description: "Ask the operators one question from inside your open run; the answer wakes your next run as data and grants nothing. One live follow-up or question at a time.",
		Params: []tools.Param{pID,
			{Name: "question", Type: "string", Required: true, Description: "The question, 1-1,000 characters."},
			{Name: "options", Type: "array", Description: "Up to 5 answer options (strings), each 1-1,000 characters."},
			{Name: "ttl_secs", Type: "integer", Description: "How long it stays open; default 86400, held between 60 and stop_at."}},
		Annotations: arm})
}

func idArg(c tools.Call) (uuid.UUID, bool, error) {
	v, ok := tools.String(c.Args, "responsibility_id")
	if !ok {
		return uuid.Nil, false, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, true, fail(NotFound, fault.NotFound, "responsibility_id %q is not a responsibility id", v)
	}
	return id, true, nil
}

func (s *Service) toolGet(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, given, err := idArg(c)
	if err != nil {
		return nil, err
	}
	if !given {
		rs, err := s.Mine(ctx, c.Subject, 200)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d responsibilities.", len(rs))
		for i := range rs {
			rs[i].Notify = Notify{} // operators' settings: where and when questions are pushed
		}
		for _, r := range rs {
			fmt.Fprintf(&b, "\n- %s %q (%s, epoch %d)", r.ID, r.Name, r.Status, r.Epoch)
		}
		return &tools.Result{Text: b.String(), Structured: map[string]any{"responsibilities": rs}}, nil
	}
	sum, err := s.Get(ctx, c.Subject, id)
	if err != nil {
		return nil, err
	}
	sum.Notify = Notify{}
	text := fmt.Sprintf("Responsibility %s %q is %s (epoch %d); this window: %d of %d runs, %d of %d cents spent, %d runs cost_not_counted.",
		sum.ID, sum.Name, sum.Status, sum.Epoch, sum.Window.Runs, sum.RunLimit, sum.Window.SpendCents, sum.SpendCapCents, sum.Window.CostNotCounted)
	if sum.OpenRun != nil {
		text += fmt.Sprintf(" Open run %s.", sum.OpenRun.ID)
	}
	return &tools.Result{Text: text, Structured: sum}, nil
}

func (s *Service) toolFollowup(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c)
	if err != nil {
		return nil, err
	}
	raw, _ := tools.String(c.Args, "due_at")
	due, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return nil, fail(InvalidDueAt, fault.Invalid, "due_at %q is not an RFC 3339 time (2026-05-01T09:00:00Z)", raw)
	}
	w, err := s.Followup(ctx, c.Subject, id, due)
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Follow-up %s armed for %s.", w.ID, w.DueAt.Format(time.RFC3339)), Structured: w}, nil
}

func (s *Service) toolAsk(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c)
	if err != nil {
		return nil, err
	}
	q := NewQuestion{}
	q.Text, _ = tools.String(c.Args, "question")
	if raw, ok := c.Args["options"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return nil, fail(InvalidQuestion, fault.Invalid, "options must be an array of strings")
		}
		for _, o := range list {
			str, ok := o.(string)
			if !ok {
				return nil, fail(InvalidQuestion, fault.Invalid, "options must be an array of strings")
			}
			q.Options = append(q.Options, str)
		}
	}
	if _, ok := c.Args["ttl_secs"]; ok {
		n, ok := tools.Int(c.Args, "ttl_secs")
		if !ok || n > int64(10*365*24*3600) {
			return nil, fail(InvalidQuestion, fault.Invalid, "ttl_secs must be a whole number of seconds")
		}
		q.TTL = ptr(time.Duration(n) * time.Second)
	}
	w, err := s.Ask(ctx, c.Subject, id, q)
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Question %s is open until %s; its answer wakes your next run.", w.ID, w.DueAt.Format(time.RFC3339)),
		Structured: w}, nil
}
