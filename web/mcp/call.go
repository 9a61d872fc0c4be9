package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// call answers tools/call through the call pipeline (services/calls),
// which decides with the policy first, with the call's arguments. Refusing a tool the caller's list hides is a JSON-RPC error
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
// run once through the call pipeline (decided, audited, run), its answer
// put as a result or a JSON-RPC error. progress may be nil.
func (h *Handler) invoke(ctx context.Context, p identity.Principal, name string, rawArgs json.RawMessage, note *callNote,
	progress func(progress, total float64, message string)) (*sdk.CallToolResult, *jsonrpc.Error) {
	a := h.calls.Call(ctx, p, name, rawArgs, progress)
	if a.Unrecorded {
		h.record(note, a.Entry.Tool, audit.OutcomeFailed, "", a.Elapsed)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: a.Failure}
	}
	h.record(note, a.Entry.Tool, a.Entry.Outcome, a.Entry.Event, a.Elapsed)
	switch {
	case a.Refusal != nil:
		return refused(*a.Refusal)
	case a.Failure != "":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: a.Failure}
	case a.ToolError != "":
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: a.ToolError}}}, nil
	}
	return resultOf(a.Result), nil
}

// resultOf is a successful tool's answer as a tools/call result.
func resultOf(out *tools.Result) *sdk.CallToolResult {
	res := &sdk.CallToolResult{IsError: out.IsError}
	if len(out.Content) > 0 && passThrough(res, out.Content) {
		if out.Structured != nil {
			res.StructuredContent = out.Structured
		}
		return res
	}
	for _, img := range out.Images {
		res.Content = append(res.Content, &sdk.ImageContent{MIMEType: img.MIMEType, Data: img.Data})
	}
	res.Content = append(res.Content, &sdk.TextContent{Text: out.Text})
	if out.Structured != nil {
		res.StructuredContent = out.Structured
	}
	return res
}

// passThrough sets res's content from content, another server's MCP
// content array, and reports whether it could be read.
func passThrough(res *sdk.CallToolResult, content json.RawMessage) bool {
	var wire sdk.CallToolResult
	if err := json.Unmarshal(append(append([]byte(`{"content":`), content...), '}'), &wire); err != nil {
		return false
	}
	res.Content = wire.Content
	return true
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

// refused answers a refusal. A tool the caller's list hides
// is refused with a JSON-RPC error. A listed tool's refusal is a result:
// the message for the model as text, and for programs the code and audit
// event in structuredContent.refusal (one client SDK reads -32003 as its
// own "connection closed" and never shows the error).
func refused(d tools.Decision) (*sdk.CallToolResult, *jsonrpc.Error) {
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

// stepUp answers an external client's tools/call for a tool whose scope it
// lacks with HTTP 403 insufficient_scope naming that scope (RFC 6750 §3.1),
// so the client can ask the member for more. It reports whether it answered.
func (h *Handler) stepUp(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek, slug string) bool {
	name := pk.Params.Name
	a, ok := h.calls.StepUp(r.Context(), p, name)
	if !ok {
		return false
	}
	note, _ := r.Context().Value(callNoteKey{}).(*callNote)
	if a.Unrecorded {
		h.record(note, name, audit.OutcomeFailed, "", a.Elapsed)
		http.Error(w, "audit trail unavailable", http.StatusServiceUnavailable)
		return true
	}
	h.record(note, name, a.Entry.Outcome, a.Entry.Event, a.Elapsed)
	d := *a.Refusal
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
