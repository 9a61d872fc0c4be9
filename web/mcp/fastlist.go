package mcp

import (
	"bytes"
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/identity"
)

// serveList answers a well-formed 2026-07-28 tools/list request from the
// list cache without the SDK: the cached page's bytes are written into the
// JSON-RPC envelope as they are, where the SDK's JSON-RPC layer would
// marshal, validate and compact them twice per request. The answer is the
// same bytes the SDK writes (one SSE message event). Only the plain,
// successful case is answered here: anything the SDK would refuse or
// answer differently — an unusual id, unknown fields, a header mismatch, a
// malformed _meta, a bad cursor, a caller the policy cannot load — goes to
// the SDK, which validates and answers it. It reports whether it answered.
func (h *Handler) serveList(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek, body []byte) bool {
	const version = Stateless
	if pk.Method != "tools/list" || r.Header.Get("Mcp-Method") != pk.Method || r.Header.Get("Mcp-Name") != "" ||
		r.Header.Get("Mcp-Protocol-Version") != version || pk.Params.Meta.Version != version {
		return false
	}
	req, ok := parseList(body, true)
	if !ok || req.version != version {
		return false
	}
	return h.answerList(w, r, p, req, version)
}

// serveSessionList is serveList for a tools/list in a legacy session the
// caller owns, with the session's own protocol version in its header and
// no _meta: the session itself holds no state a list reads or changes.
func (h *Handler) serveSessionList(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek, body []byte, b binding) bool {
	if pk.Method != "tools/list" {
		return false
	}
	init := b.session.InitializeParams()
	if init == nil || init.ProtocolVersion == "" || r.Header.Get("Mcp-Protocol-Version") != init.ProtocolVersion {
		return false
	}
	req, ok := parseList(body, false)
	if !ok {
		return false
	}
	return h.answerList(w, r, p, req, "")
}

// answerList writes the page req names, as the SDK would, when the request
// is one the SDK's transport accepts and the page is cached.
func (h *Handler) answerList(w http.ResponseWriter, r *http.Request, p identity.Principal, req listRequest, era string) bool {
	if h.lists.off || baseMediaType(r.Header.Get("Content-Type")) != "application/json" ||
		!acceptsBoth(r.Header.Values("Accept")) || rebinding(r) {
		return false
	}
	pg, rerr := h.listPage(r.Context(), p, req.cursor, era)
	if rerr != nil || pg.raw == nil {
		return false
	}
	buf := envelopes.Get().(*bytes.Buffer)
	defer envelopes.Put(buf)
	buf.Reset()
	buf.WriteString(`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":`)
	buf.Write(req.id)
	buf.WriteString(`,"result":`)
	buf.Write(pg.raw)
	buf.WriteString("}\n\n")
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	h.listsServed.Add(1)
	return true
}

// envelopes holds the buffers answers are assembled in. A buffer grown past
// a large page is dropped rather than kept.
var envelopes = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// listRequest is what serveList needs from a tools/list request.
type listRequest struct {
	id      []byte // the request id, already in the form the SDK writes it
	cursor  string
	version string
}

// parseList reads a tools/list request with exactly the members the SDK
// reads (matched case-sensitively, as the SDK does): jsonrpc "2.0", a plain
// id, the method, and params with at most a string cursor and, in the
// 2026-07-28 era (modern), its _meta (clientCapabilities an object the SDK
// decodes, clientInfo absent or an implementation). Anything else is not ok.
func parseList(body []byte, modern bool) (listRequest, bool) {
	var out listRequest
	if bytes.Count(body, []byte("{"))+bytes.Count(body, []byte("[")) > 64 {
		return out, false // deep or large: the SDK bounds nesting itself
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || !only(top, "jsonrpc", "id", "method", "params") ||
		string(top["jsonrpc"]) != `"2.0"` || string(top["method"]) != `"tools/list"` || !plainID(top["id"]) {
		return out, false
	}
	out.id = top["id"]
	var params map[string]json.RawMessage
	if raw, ok := top["params"]; ok || modern {
		if json.Unmarshal(raw, &params) != nil || params == nil {
			return out, false
		}
	}
	if c, ok := params["cursor"]; ok && json.Unmarshal(c, &out.cursor) != nil {
		return out, false
	}
	if !modern {
		return out, only(params, "cursor")
	}
	var meta map[string]json.RawMessage
	if !only(params, "cursor", "_meta") || json.Unmarshal(params["_meta"], &meta) != nil ||
		!only(meta, metaVersion, metaClientInfo, metaCapabilities) ||
		json.Unmarshal(meta[metaVersion], &out.version) != nil || !validMeta(meta) {
		return out, false
	}
	return out, true
}

const (
	metaVersion      = sdk.MetaKeyProtocolVersion
	metaClientInfo   = sdk.MetaKeyClientInfo
	metaCapabilities = sdk.MetaKeyClientCapabilities
)

// validMeta reports whether the SDK would accept the _meta's client
// capabilities (required, an object) and client info (optional).
func validMeta(meta map[string]json.RawMessage) bool {
	var caps struct {
		sdk.ClientCapabilities
		// roots as the SDK decodes it in this era (a pointer to the
		// same shape as the embedded value, which it shadows).
		Roots *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"roots,omitempty"`
	}
	if !isObject(meta[metaCapabilities]) || json.Unmarshal(meta[metaCapabilities], &caps) != nil {
		return false
	}
	if ci, ok := meta[metaClientInfo]; ok {
		var impl sdk.Implementation
		if !isObject(ci) || json.Unmarshal(ci, &impl) != nil {
			return false
		}
	}
	return true
}

// only reports whether m has no keys but these.
func only(m map[string]json.RawMessage, keys ...string) bool {
	n := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			n++
		}
	}
	return n == len(m)
}

// plainID reports whether a JSON-RPC id is one the SDK writes back
// byte for byte: a small non-negative integer without a leading zero, or a
// string of printable ASCII needing no escape.
func plainID(raw json.RawMessage) bool {
	if len(raw) == 0 || len(raw) > 64 {
		return false
	}
	if raw[0] == '"' {
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	if len(raw) > 15 || (raw[0] == '0' && len(raw) > 1) {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// rebinding reports a request the SDK refuses as a DNS-rebinding attempt:
// received on a loopback address for a Host that is not one.
func rebinding(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && a != nil && isLoopbackAddr(a.String()) && !isLoopbackAddr(r.Host)
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func baseMediaType(v string) string {
	t, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return t
}
