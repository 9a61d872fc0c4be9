package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/identity"
)

// serveCall answers a well-formed 2026-07-28 tools/call without the SDK:
// the request is decoded once, the call goes through the same invoke as
// the SDK's path (policy, audit row durable before the answer, pending row
// before a tool that may change something), and the answer is encoded
// straight into the one SSE message event the SDK would write, byte for
// byte. The SDK's JSON-RPC layer would decode the body several times over,
// build a session per request and marshal the result twice. Only the plain
// case is answered here: anything the SDK would refuse or treat
// differently — an unusual id, unknown members, a header mismatch, a
// malformed _meta, a progress token — goes to the SDK. It reports whether
// it answered.
func (h *Handler) serveCall(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek, body []byte) bool {
	const version = Stateless
	if pk.Method != "tools/call" || r.Header.Get("Mcp-Method") != pk.Method || r.Header.Get("Mcp-Protocol-Version") != version ||
		pk.Params.Meta.Version != version || h.callsOff {
		return false
	}
	req, ok := parseCall(body, true)
	if !ok || req.version != version || r.Header.Get("Mcp-Name") != req.name || !h.plainPost(r) {
		return false
	}
	// The SDK propagates a closed request to the call's context in this
	// era, and so does r's.
	h.answerCall(w, r.Context(), p, req, true)
	return true
}

// serveSessionCall is serveCall for a tools/call in a legacy session the
// caller owns, with the session's own protocol version in its header and
// no _meta. As in the SDK's session, a call is not cancelled by its HTTP
// request ending, but by the client's notifications/cancelled naming its
// id (see cancelCall) or by the session's end; an id already in flight
// here is refused as the SDK refuses it.
func (h *Handler) serveSessionCall(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek, body []byte, b binding) bool {
	if pk.Method != "tools/call" || h.callsOff {
		return false
	}
	init := b.session.InitializeParams()
	if init == nil || init.ProtocolVersion == "" || r.Header.Get("Mcp-Protocol-Version") != init.ProtocolVersion {
		return false
	}
	req, ok := parseCall(body, false)
	if !ok || !h.plainPost(r) {
		return false
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	key := string(req.id)
	if !b.calls.start(key, cancel) {
		writeJSONRPCError(w, http.StatusBadRequest, req.id, jsonrpc.CodeInvalidRequest, "duplicate in-flight request ID "+idText(req.id))
		return true
	}
	defer b.calls.end(key)
	h.answerCall(w, ctx, p, req, false)
	return true
}

// plainPost reports whether r is a POST the SDK's transport accepts as it
// is: a JSON body, an Accept naming both answers, no rebinding.
func (h *Handler) plainPost(r *http.Request) bool {
	return baseMediaType(r.Header.Get("Content-Type")) == "application/json" && acceptsBoth(r.Header.Values("Accept")) && !rebinding(r)
}

// answerCall runs req and writes its answer as the SDK would: a result or
// a JSON-RPC error in one SSE message event. A 2026-07-28 result carries
// what the SDK stamps on a tools/call result of that era: the server's
// identity in _meta (and no resultType, which the SDK adds only to results
// of its own tool handlers).
func (h *Handler) answerCall(w http.ResponseWriter, ctx context.Context, p identity.Principal, req callRequest, modern bool) {
	note, _ := ctx.Value(callNoteKey{}).(*callNote)
	res, rerr := h.invoke(ctx, p, req.name, req.args, note, nil)
	buf := envelopes.Get().(*bytes.Buffer)
	defer envelopes.Put(buf)
	buf.Reset()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("Connection", "keep-alive")
	if status := errorStatus(rerr, modern); status != 0 {
		// In this era some errors are the HTTP response itself, as JSON
		// rather than an event.
		buf.WriteString(`{"jsonrpc":"2.0","id":`)
		buf.Write(req.id)
		buf.WriteString(`,"error":`)
		_ = encodeJSON(buf, wireError{Code: rerr.Code, Message: rerr.Message})
		buf.WriteString("}")
		hd.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
		h.callsServed.Add(1)
		return
	}
	buf.WriteString(`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":`)
	buf.Write(req.id)
	if rerr != nil {
		buf.WriteString(`,"error":`)
		_ = encodeJSON(buf, wireError{Code: rerr.Code, Message: rerr.Message})
	} else {
		buf.WriteString(`,"result":`)
		if err := h.encodeResult(buf, res, modern); err != nil {
			// Every result is built here from strings and values the
			// registry's tools return; one that cannot be encoded is a bug.
			h.log.ErrorContext(ctx, "tool result cannot be encoded", "tool", req.name, "err", err)
			buf.Reset()
			buf.WriteString(`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":`)
			buf.Write(req.id)
			buf.WriteString(`,"error":`)
			_ = encodeJSON(buf, wireError{Code: jsonrpc.CodeInternalError, Message: "internal error"})
		}
	}
	buf.WriteString("}\n\n")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	h.callsServed.Add(1)
}

// encodeResult appends res as the SDK encodes it, stamped in the
// 2026-07-28 era with the server's identity in _meta. The common result —
// one text, perhaps an error, nothing else — is written directly, its
// strings escaped as the result's own MarshalJSON escapes them
// (encoding/json with HTML escaping); any other goes through encodeJSON.
func (h *Handler) encodeResult(buf *bytes.Buffer, res *sdk.CallToolResult, modern bool) error {
	text, ok := plainText(res)
	if !ok || (modern && h.stamp == nil) {
		if modern {
			res.Meta = sdk.Meta{metaServerInfo: h.impl}
		}
		return encodeJSON(buf, res)
	}
	quoted, err := json.Marshal(text)
	if err != nil {
		return err
	}
	buf.WriteByte('{')
	if modern {
		buf.WriteString(`"_meta":`)
		buf.Write(h.stamp)
		buf.WriteByte(',')
	}
	buf.WriteString(`"content":[{"type":"text","text":`)
	buf.Write(quoted)
	buf.WriteString(`}]`)
	if res.IsError {
		buf.WriteString(`,"isError":true`)
	}
	buf.WriteByte('}')
	return nil
}

// plainText returns the text of a result that holds one text content and
// nothing else (no _meta, annotations, structured content or input
// requests).
func plainText(res *sdk.CallToolResult) (string, bool) {
	if len(res.Content) != 1 || res.Meta != nil || res.StructuredContent != nil || res.InputRequests != nil || res.RequestState != "" {
		return "", false
	}
	t, ok := res.Content[0].(*sdk.TextContent)
	if !ok || t.Meta != nil || t.Annotations != nil {
		return "", false
	}
	return t.Text, true
}

// errorStatus is the HTTP status the SDK answers a JSON-RPC error with in
// the 2026-07-28 era (404 for an unknown method, 400 for invalid params and
// the protocol-version and capability errors), or 0 for an error sent as an
// event, as every error is before that era.
func errorStatus(rerr *jsonrpc.Error, modern bool) int {
	if rerr == nil || !modern {
		return 0
	}
	switch rerr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, sdk.CodeUnsupportedProtocolVersion, sdk.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

const metaServerInfo = sdk.MetaKeyServerInfo

// wireError is a JSON-RPC error object as the SDK writes it.
type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// encodeJSON appends v to buf as the SDK's JSON-RPC layer encodes a
// message: encoding/json without HTML escaping (what a value's own
// MarshalJSON escapes stays escaped), no trailing newline.
func encodeJSON(buf *bytes.Buffer, v any) error {
	n := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Truncate(n)
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// writeJSONRPCError answers with a bare JSON-RPC error and an HTTP status,
// as the SDK's transport does for a request it refuses before any handler.
func writeJSONRPCError(w http.ResponseWriter, status int, id []byte, code int64, msg string) {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"error":`)
	_ = encodeJSON(&buf, wireError{Code: code, Message: msg})
	buf.WriteString("}")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// idText is a plain id as the SDK prints it in a message: a string's
// characters, a number's digits.
func idText(id []byte) string {
	return string(bytes.Trim(id, `"`))
}

// callRequest is what serveCall needs from a tools/call request.
type callRequest struct {
	id      []byte // the request id, already in the form the SDK writes it
	name    string
	args    json.RawMessage // as received; nil when absent
	version string
}

// maxCallBrackets bounds the objects and arrays of a request answered
// here, so that none nests deeper than the SDK accepts (1,000).
const maxCallBrackets = 1000

// parseCall reads a tools/call request with exactly the members the SDK
// reads (matched case-sensitively, as the SDK does): jsonrpc "2.0", a plain
// id, the method, and params with a string name, optional arguments (any
// JSON value: the tool's checks answer a bad one) and, in the 2026-07-28
// era (modern), its _meta as parseList reads it; before it, no _meta (a
// progress token goes to the SDK, which sends the notifications). Anything
// else is not ok.
func parseCall(body []byte, modern bool) (callRequest, bool) {
	var out callRequest
	if bytes.Count(body, []byte("{"))+bytes.Count(body, []byte("[")) > maxCallBrackets {
		return out, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || !only(top, "jsonrpc", "id", "method", "params") ||
		string(top["jsonrpc"]) != `"2.0"` || string(top["method"]) != `"tools/call"` || !plainID(top["id"]) {
		return out, false
	}
	out.id = top["id"]
	var params map[string]json.RawMessage
	if json.Unmarshal(top["params"], &params) != nil || params == nil {
		return out, false
	}
	name := params["name"]
	if len(name) == 0 || name[0] != '"' || json.Unmarshal(name, &out.name) != nil {
		return out, false
	}
	out.args = params["arguments"]
	if !modern {
		return out, only(params, "name", "arguments")
	}
	var meta map[string]json.RawMessage
	if !only(params, "name", "arguments", "_meta") || json.Unmarshal(params["_meta"], &meta) != nil ||
		!only(meta, metaVersion, metaClientInfo, metaCapabilities) ||
		json.Unmarshal(meta[metaVersion], &out.version) != nil || !validMeta(meta) {
		return out, false
	}
	return out, true
}

// inflight is the calls of a legacy session being answered by the endpoint,
// by request id, each with what cancels it.
type inflight struct {
	mu sync.Mutex
	m  map[string]context.CancelFunc
}

// start registers a call; false when its id is already in flight.
func (f *inflight) start(id string, cancel context.CancelFunc) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[id]; ok {
		return false
	}
	if f.m == nil {
		f.m = map[string]context.CancelFunc{}
	}
	f.m[id] = cancel
	return true
}

func (f *inflight) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, id)
}

// cancel cancels the call with this id, if one is in flight.
func (f *inflight) cancel(id string) {
	f.mu.Lock()
	c := f.m[id]
	f.mu.Unlock()
	if c != nil {
		c()
	}
}

// cancelAll cancels every call in flight: the session ended.
func (f *inflight) cancelAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.m {
		c()
	}
}

// cancelCall cancels the endpoint's own call that a legacy session's
// notifications/cancelled names (the SDK cancels its own), before the
// notification goes on to the SDK.
func cancelCall(b binding, body []byte) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &n) == nil && len(n.Params.RequestID) > 0 {
		b.calls.cancel(string(n.Params.RequestID))
	}
}
