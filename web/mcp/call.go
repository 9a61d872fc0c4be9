package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// call answers tools/call. The policy decides first, with the call's
// arguments. Refusing a tool the caller's list hides is a JSON-RPC error
// (-32003, or -32602 for a name no tool has) carrying the gate's own
// message; refusing a tool the list shows (a [permissions] flag, a record
// relationship check) is an isError result with the gate's message as
// text and its code (-32003) and audit event in structuredContent.refusal,
// which every client SDK hands its caller as a result. Validation and business-rule failures are isError results the model can
// read; internal failures are JSON-RPC errors. Whatever happens, one audit
// row is durable before the answer leaves, and a tool that is not read-only
// runs only once its row is durable as pending (begin): its side effect
// never exists without its row.
func (h *Handler) call(ctx context.Context, req *sdk.CallToolRequest) (sdk.Result, error) {
	p, _, ok := principalOf(req)
	if !ok {
		return nil, &jsonrpc.Error{Code: tools.CodeRefused, Message: "no caller identity"}
	}
	res, rerr := h.invoke(ctx, p, req.Params.Name, req.Params.Arguments, noteOf(req), progressOf(ctx, req))
	if rerr != nil {
		return nil, rerr
	}
	return res, nil
}

// invoke is a tools/call of p's, through the SDK (call) or not (serveCall):
// decided, audited and run, with its answer as a result or a JSON-RPC
// error. progress may be nil.
func (h *Handler) invoke(ctx context.Context, p identity.Principal, name string, rawArgs json.RawMessage, note *callNote,
	progress func(progress, total float64, message string)) (*sdk.CallToolResult, *jsonrpc.Error) {
	start := time.Now()
	e := audit.Entry{ID: audit.NewID(), TenantID: p.TenantID, PrincipalKind: principalKind(p), PrincipalID: p.ID(),
		Tool: name, At: start}
	allowed, res, rerr := h.decide(ctx, p, name, rawArgs, &e)
	if allowed != nil {
		if err := h.begin(ctx, allowed.tool, e); err != nil {
			h.log.ErrorContext(ctx, "audit record failed; not running the tool", "tool", e.Tool, "err", err)
			h.record(note, e.Tool, audit.OutcomeFailed, "", time.Since(start))
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the audit trail is unavailable, so the call was not run; retry later"}
		}
		allowed.call.Progress = progress
		res, rerr = h.run(ctx, allowed, &e)
	}
	e.Latency = time.Since(start)
	// A call its client cancelled is still recorded.
	if err := h.audit.Record(context.WithoutCancel(ctx), e); err != nil {
		h.log.ErrorContext(ctx, "audit record failed; withholding the result", "tool", e.Tool, "err", err)
		h.record(note, e.Tool, audit.OutcomeFailed, "", time.Since(start))
		msg := "the audit trail is unavailable, so the result was withheld; retry later"
		if allowed != nil && !h.readOnly(allowed.tool) {
			msg = "the call ran and is recorded as pending, but its outcome could not be recorded, so the result was withheld; check its effect before retrying"
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	}
	h.record(note, e.Tool, e.Outcome, e.Event, time.Since(start))
	if rerr != nil {
		return nil, rerr
	}
	return res, nil
}

// allowedCall is a call the policy allowed, with arguments that passed the
// tool's checks: what run needs.
type allowedCall struct {
	tool *tools.Tool
	call tools.Call
}

// decide applies the policy and the argument checks. It returns either the
// allowed call, or the answer for a refusal or bad arguments, with e filled
// in accordingly.
func (h *Handler) decide(ctx context.Context, p identity.Principal, name string, rawArgs json.RawMessage, e *audit.Entry) (*allowedCall, *sdk.CallToolResult, *jsonrpc.Error) {
	refuse := func(code int64, event, msg string) *jsonrpc.Error {
		e.Outcome, e.Code, e.Event, e.Message = audit.OutcomeRefused, code, event, msg
		return &jsonrpc.Error{Code: code, Message: msg}
	}
	tool, ok := h.reg.Get(name)
	if !ok {
		return nil, nil, refuse(tools.CodeUnknownTool, tools.EventUnknownTool, fmt.Sprintf("unknown tool %q", name))
	}
	sub, err := h.subjects.Load(ctx, p)
	if err != nil {
		je := rpcError(err)
		return nil, nil, refuse(je.Code, tools.EventCapabilityDenied, je.Message)
	}
	args, argErr := tools.DecodeArgs(rawArgs)
	e.ArgsDigest = h.reg.Digest(tool, args)
	e.Change = h.reg.AuditNote(tool, p.TenantID.String(), args)
	if d := h.reg.Decide(sub, tool, args); !d.Allowed {
		res, rerr := refused(e, d)
		return nil, res, rerr
	}
	e.Event = tools.EventCall
	if argErr == nil {
		argErr = h.reg.CheckArgs(tool, args)
	}
	if argErr != nil {
		return nil, h.toolError(e, argErr), nil
	}
	return &allowedCall{tool: tool, call: tools.Call{Subject: sub, ID: e.ID, Name: name, Args: args, Raw: rawArgs}}, nil, nil
}

// begin makes the row of a call that may change something durable, as
// pending, before the tool runs; call completes it with the outcome. A
// read-only tool changes nothing, so its one row is written after it ran.
func (h *Handler) begin(ctx context.Context, tool *tools.Tool, e audit.Entry) error {
	if h.readOnly(tool) {
		return nil
	}
	e.Outcome = audit.OutcomePending
	return h.audit.Record(ctx, e)
}

// readOnly reports whether the tool (or the tool a deprecated name stands
// for) declares that it changes nothing.
func (h *Handler) readOnly(t *tools.Tool) bool { return h.reg.Target(t).Annotations.ReadOnly }

// run runs an allowed call and maps its answer.
func (h *Handler) run(ctx context.Context, c *allowedCall, e *audit.Entry) (*sdk.CallToolResult, *jsonrpc.Error) {
	out, err := h.reg.Target(c.tool).Handler(ctx, c.call)
	var refusal *tools.RefusalError
	switch {
	case errors.As(err, &refusal):
		return refused(e, refusal.Decision)
	case err != nil && fault.CodeOf(err) == fault.Internal:
		h.log.ErrorContext(ctx, "tool failed", "tool", c.call.Name, "err", err)
		e.Outcome, e.Code, e.Message = audit.OutcomeFailed, jsonrpc.CodeInternalError, "internal error"
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error while running " + c.call.Name}
	case err != nil:
		var ev *tools.EventError
		if errors.As(err, &ev) {
			e.Event = ev.Event
		}
		return h.toolError(e, err), nil
	}
	e.Outcome = audit.OutcomeOK
	if out.Event != "" {
		e.Event = out.Event
	}
	res := &sdk.CallToolResult{}
	for _, img := range out.Images {
		res.Content = append(res.Content, &sdk.ImageContent{MIMEType: img.MIMEType, Data: img.Data})
	}
	res.Content = append(res.Content, &sdk.TextContent{Text: out.Text})
	if out.Structured != nil {
		res.StructuredContent = out.Structured
	}
	return res, nil
}

// progressOf returns what sends the caller progress notifications for
// this call, or nil when it sent no progress token.
func progressOf(ctx context.Context, req *sdk.CallToolRequest) func(progress, total float64, message string) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	return func(progress, total float64, message string) {
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: message})
	}
}

// refused answers a refusal and fills in e. A tool the caller's list hides
// is refused with a JSON-RPC error. A listed tool's refusal is a result:
// the message for the model as text, and for programs the code and audit
// event in structuredContent.refusal (one client SDK reads -32003 as its
// own "connection closed" and never shows the error).
func refused(e *audit.Entry, d tools.Decision) (*sdk.CallToolResult, *jsonrpc.Error) {
	e.Outcome, e.Code, e.Event, e.Message = audit.OutcomeRefused, d.Code, d.Event, d.Reason
	if d.Hidden {
		return nil, &jsonrpc.Error{Code: d.Code, Message: d.Reason}
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: d.Reason}},
		StructuredContent: map[string]any{"refusal": Refusal{Code: d.Code, Event: d.Event, Message: d.Reason}}}, nil
}

// Refusal is structuredContent.refusal of a listed tool's refused call:
// what a JSON-RPC error would have said, and the audit event it recorded.
type Refusal struct {
	Code    int64  `json:"code"`
	Event   string `json:"event"`
	Message string `json:"message"`
}

// toolError is a failure the model should read: an isError result.
func (h *Handler) toolError(e *audit.Entry, err error) *sdk.CallToolResult {
	msg := fault.Message(err)
	e.Outcome, e.Message = audit.OutcomeToolError, msg
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// stepUp answers an external client's tools/call for a tool whose scope it
// lacks with HTTP 403 insufficient_scope naming that scope (RFC 6750 §3.1),
// so the client can ask the member for more. It reports whether it answered.
func (h *Handler) stepUp(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek, slug string) bool {
	name := pk.Params.Name
	tool, ok := h.reg.Get(name)
	if !ok {
		return false
	}
	sub, err := h.subjects.Load(r.Context(), p)
	if err != nil {
		return false
	}
	d := h.reg.Decide(sub, tool, nil)
	if d.Allowed || d.NeedScope == "" {
		return false
	}
	e := audit.Entry{ID: audit.NewID(), TenantID: p.TenantID, PrincipalKind: principalKind(p), PrincipalID: p.ID(), Tool: name,
		Outcome: audit.OutcomeRefused, Code: d.Code, Event: d.Event, Message: d.Reason, At: time.Now()}
	note, _ := r.Context().Value(callNoteKey{}).(*callNote)
	if err := h.audit.Record(r.Context(), e); err != nil {
		h.record(note, name, audit.OutcomeFailed, "", time.Since(e.At))
		http.Error(w, "audit trail unavailable", http.StatusServiceUnavailable)
		return true
	}
	h.record(note, name, e.Outcome, e.Event, time.Since(e.At))
	meta := h.resourceMetadata(r, slug)
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
		d.NeedScope, meta, d.Reason))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	id := pk.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": d.Code, "message": d.Reason}})
	return true
}

func (h *Handler) resourceMetadata(r *http.Request, slug string) string {
	if h.opts.ResourceMetadata != nil {
		return h.opts.ResourceMetadata(r, slug)
	}
	scheme := "https"
	if r.TLS == nil {
		scheme = "http"
	}
	return scheme + "://" + r.Host + "/.well-known/oauth-protected-resource/t/" + slug + "/mcp"
}
