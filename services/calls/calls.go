// Package calls is the one sequence every tool call follows, whatever edge
// it arrives on: the registry's one policy decides with the call's
// arguments, a call that may change something gets its audit row durably
// as pending before it runs, the tool runs, and the row is completed with
// the outcome; a refusal is audited the same way. An edge calls Pipeline.Call
// once per call and puts the Answer into its own protocol; new tool
// families plug in through the registry and need nothing here.
package calls

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Pipeline runs tool calls. It is safe for concurrent use.
type Pipeline struct {
	reg      *tools.Registry
	subjects *tools.Subjects
	audit    audit.Recorder
	log      *slog.Logger
}

// New returns the pipeline of reg's tools, resolving callers through
// subjects and writing every call's row to rec.
func New(reg *tools.Registry, subjects *tools.Subjects, rec audit.Recorder, log *slog.Logger) *Pipeline {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pipeline{reg: reg, subjects: subjects, audit: rec, log: log}
}

// Answer is how one call ended. Exactly one of Result, Refusal, ToolError
// and Failure is set.
type Answer struct {
	// Result is a successful tool's answer.
	Result *tools.Result
	// Refusal is the policy's refusal, or the tool's own (a RefusalError);
	// Hidden says whether the caller's list hides the tool.
	Refusal *tools.Decision
	// ToolError is a failure the model should read: bad arguments or a
	// business rule, with its safe message.
	ToolError string
	// Failure is an internal failure's message, safe to show; its code is
	// tools.CodeInternal.
	Failure string
	// Entry is the call's audit row as it was recorded. When Unrecorded,
	// the row could not be made durable and Failure says what that means
	// for the caller.
	Entry      audit.Entry
	Unrecorded bool
	// Elapsed is the call's whole time, its audit writes included.
	Elapsed time.Duration
}

// Call decides, audits and runs who's call of the tool name with the raw
// arguments object. progress, when not nil, sends the caller progress
// notifications. Whatever happens, one audit row is durable before Call
// returns an answer other than a Failure with Unrecorded, and a tool that
// is not read-only runs only once its row is durable as pending: its side
// effect never exists without its row.
func (p *Pipeline) Call(ctx context.Context, who identity.Principal, name string, raw json.RawMessage,
	progress func(progress, total float64, message string)) Answer {
	start := time.Now()
	e := audit.Entry{ID: audit.NewID(), TenantID: who.TenantID, PrincipalKind: string(who.Kind), PrincipalID: who.ID(),
		Tool: name, At: start}
	var a Answer
	c := p.decide(ctx, who, name, raw, &e, &a)
	if c != nil {
		if err := p.begin(ctx, c.tool, e); err != nil {
			p.log.ErrorContext(ctx, "audit record failed; not running the tool", "tool", e.Tool, "err", err)
			return Answer{Failure: "the audit trail is unavailable, so the call was not run; retry later",
				Entry: e, Unrecorded: true, Elapsed: time.Since(start)}
		}
		c.call.Progress = progress
		p.run(ctx, c, &e, &a)
	}
	e.Latency = time.Since(start)
	// A call its client cancelled is still recorded.
	if err := p.audit.Record(context.WithoutCancel(ctx), e); err != nil {
		p.log.ErrorContext(ctx, "audit record failed; withholding the result", "tool", e.Tool, "err", err)
		msg := "the audit trail is unavailable, so the result was withheld; retry later"
		if c != nil && !p.readOnly(c.tool) {
			msg = "the call ran and is recorded as pending, but its outcome could not be recorded, so the result was withheld; check its effect before retrying"
		}
		return Answer{Failure: msg, Entry: e, Unrecorded: true, Elapsed: time.Since(start)}
	}
	a.Entry, a.Elapsed = e, time.Since(start)
	return a
}
