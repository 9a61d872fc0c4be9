package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// allowed is a call the policy allowed, with arguments that passed the
// tool's checks: what run needs.
type allowed struct {
	tool *tools.Tool
	call tools.Call
}

// decide applies the policy and the argument checks. It returns the
// allowed call, or nil with a's refusal or tool error set; e is filled in
// either way.
func (p *Pipeline) decide(ctx context.Context, who identity.Principal, name string, raw json.RawMessage, e *audit.Entry, a *Answer) *allowed {
	tool, ok := p.reg.Get(name)
	if !ok {
		refuse(e, a, tools.Decision{Hidden: true, Code: tools.CodeUnknownTool, Event: tools.EventUnknownTool,
			Reason: fmt.Sprintf("unknown tool %q", name)})
		return nil
	}
	sub, err := p.subjects.Load(ctx, who)
	if err != nil {
		code, msg := CodeOf(err)
		refuse(e, a, tools.Decision{Hidden: true, Code: code, Event: tools.EventCapabilityDenied, Reason: msg})
		return nil
	}
	args, argErr := tools.DecodeArgs(raw)
	e.ArgsDigest = p.reg.Digest(tool, args)
	e.Change = p.reg.AuditNote(tool, who.TenantID.String(), args)
	if note := p.reg.Target(tool).ArgsNote; note != nil && args != nil {
		e.Change = tools.MergeNote(e.Change, note(args))
	}
	if d := p.reg.Decide(sub, tool, args); !d.Allowed {
		refuse(e, a, d)
		return nil
	}
	e.Event = tools.EventCall
	if argErr == nil {
		argErr = p.reg.CheckArgs(tool, args)
	}
	if argErr != nil {
		toolError(e, a, argErr)
		return nil
	}
	return &allowed{tool: tool, call: tools.Call{Subject: sub, ID: e.ID, Name: name, Args: args, Raw: raw}}
}

// begin makes the row of a call that may change something durable, as
// pending, before the tool runs; Call completes it with the outcome. A
// read-only tool changes nothing, so its one row is written after it ran.
func (p *Pipeline) begin(ctx context.Context, tool *tools.Tool, e audit.Entry) error {
	if p.readOnly(tool) {
		return nil
	}
	e.Outcome = audit.OutcomePending
	return p.audit.Record(ctx, e)
}

// readOnly reports whether the tool (or the tool a deprecated name stands
// for) declares that it changes nothing.
func (p *Pipeline) readOnly(t *tools.Tool) bool { return p.reg.Target(t).Annotations.ReadOnly }

// run runs an allowed call and files its answer.
func (p *Pipeline) run(ctx context.Context, c *allowed, e *audit.Entry, a *Answer) {
	out, err := p.reg.Target(c.tool).Handler(ctx, c.call)
	var refusal *tools.RefusalError
	switch {
	case errors.As(err, &refusal):
		var noted *tools.NotedError
		if errors.As(err, &noted) {
			e.Change = tools.MergeNote(e.Change, noted.Note)
		}
		refuse(e, a, refusal.Decision)
	case err != nil && fault.CodeOf(err) == fault.Internal:
		p.log.ErrorContext(ctx, "tool failed", "tool", c.call.Name, "err", err)
		e.Outcome, e.Code, e.Message = audit.OutcomeFailed, tools.CodeInternal, "internal error"
		a.Failure = "internal error while running " + c.call.Name
	case err != nil:
		var ev *tools.EventError
		if errors.As(err, &ev) {
			e.Event = ev.Event
		}
		var noted *tools.NotedError
		if errors.As(err, &noted) {
			e.Change = tools.MergeNote(e.Change, noted.Note)
		}
		toolError(e, a, err)
	default:
		e.Outcome = audit.OutcomeOK
		if out.IsError {
			e.Outcome, e.Message = audit.OutcomeToolError, "the tool answered isError"
		}
		if out.Event != "" {
			e.Event = out.Event
		}
		e.Change = tools.MergeNote(e.Change, out.Note)
		a.Result = out
	}
}

// refuse files a refusal in the row and the answer.
func refuse(e *audit.Entry, a *Answer, d tools.Decision) {
	e.Outcome, e.Code, e.Event, e.Message = audit.OutcomeRefused, d.Code, d.Event, d.Reason
	a.Refusal = &d
}

// toolError files a failure the model should read.
func toolError(e *audit.Entry, a *Answer, err error) {
	msg := fault.Message(err)
	e.Outcome, e.Message = audit.OutcomeToolError, msg
	a.ToolError = msg
}

// CodeOf is the JSON-RPC code and safe message a call refused for err
// carries, as its audit row records them: a refusal's for Unauthorized and
// Forbidden, invalid params for Invalid, and an internal error otherwise.
func CodeOf(err error) (int64, string) {
	switch fault.CodeOf(err) {
	case fault.Unauthorized, fault.Forbidden:
		return tools.CodeRefused, fault.Message(err)
	case fault.Invalid:
		return tools.CodeInvalid, fault.Message(err)
	}
	return tools.CodeInternal, "internal error"
}
