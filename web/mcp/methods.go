package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// receive answers tools/list and tools/call from the registry and the
// policy, binds new legacy sessions to their principal, and registers
// listen streams; everything else is the SDK's.
func (h *Handler) receive(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			return h.list(ctx, req.(*sdk.ListToolsRequest))
		case "tools/call":
			return h.call(ctx, req.(*sdk.CallToolRequest))
		case "subscriptions/listen":
			return h.listen(ctx, method, req, next)
		case "initialize":
			res, err := next(ctx, method, req)
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok && err == nil && ss.ID() != "" {
				if p, _, ok := principalOf(req); ok {
					h.sessions.bind(ss.ID(), owner(p), ss, h.opts.SessionTimeout)
				}
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// sdkMethods are the client-to-server methods the SDK's session handler
// accepts (go-sdk v1.8.0). In a legacy session the SDK answers any other
// method with a plain-text HTTP 400, which no client reads as JSON-RPC, so
// the endpoint answers it first (unknownMethod).
var sdkMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "completion/complete": true,
	"tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "logging/setLevel": true,
	"subscriptions/listen": true, "notifications/initialized": true, "notifications/cancelled": true,
	"notifications/progress": true, "notifications/roots/list_changed": true,
}

// unknownMethod answers a single JSON-RPC message whose method the server
// does not have: a request gets JSON-RPC -32601 Method not found with its
// id; a notification, which is never answered, is accepted and ignored. It
// reports whether it answered.
func unknownMethod(w http.ResponseWriter, pk *peek) bool {
	if pk.Method == "" || sdkMethods[pk.Method] {
		return false
	}
	if len(pk.ID) == 0 || string(pk.ID) == "null" {
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": pk.ID,
		"error": map[string]any{"code": jsonrpc.CodeMethodNotFound, "message": fmt.Sprintf("method not found: %q", pk.Method)}})
	return true
}

func (h *Handler) wireTool(t *tools.Tool) *sdk.Tool {
	target := h.reg.Target(t)
	a := target.Annotations
	return &sdk.Tool{
		Name:        t.Name,
		Description: h.reg.ListedDescription(t),
		InputSchema: h.reg.InputSchema(t),
		Annotations: &sdk.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive,
			IdempotentHint: a.Idempotent, OpenWorldHint: a.OpenWorld},
	}
}

// list answers tools/list: exactly the tools the policy shows the caller, in
// registry (name) order, a page at a time behind an opaque cursor. The
// visible set and the encoded page come from the list cache (listcache.go).
func (h *Handler) list(ctx context.Context, req *sdk.ListToolsRequest) (sdk.Result, error) {
	p, _, ok := principalOf(req)
	if !ok {
		return nil, &jsonrpc.Error{Code: tools.CodeRefused, Message: "no caller identity"}
	}
	cursor, era := "", ""
	if req.Params != nil {
		cursor = req.Params.Cursor
		// The era as the SDK read it (its _meta keys match exactly).
		era, _ = req.Params.Meta[metaVersion].(string)
	}
	pg, rerr := h.listPage(ctx, p, cursor, era)
	if rerr != nil {
		return nil, rerr
	}
	if pg.raw == nil {
		return pg.ListToolsResult, nil // the cache is off
	}
	// The SDK stamps the result it is handed, so it gets its own copy of
	// the shared page; the encoded bytes already hold what it stamps.
	cp := *pg.ListToolsResult
	return &listPage{ListToolsResult: &cp, raw: pg.raw}, nil
}

// listPage returns the page of p's visible set that cursor names, for the
// era's callers. Both the SDK's path (list) and the endpoint's own
// (serveList) answer from it.
func (h *Handler) listPage(ctx context.Context, p identity.Principal, cursor, era string) (*listPage, *jsonrpc.Error) {
	sub, err := h.subjects.Load(ctx, p)
	if err != nil {
		return nil, rpcError(err)
	}
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !strings.HasPrefix(string(raw), "after:") {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		after = strings.TrimPrefix(string(raw), "after:")
	}
	pg, err := h.page(pageKey{tenant: p.TenantID, set: h.visibleSet(sub), after: after, era: era})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	return pg, nil
}

// sortSearch returns the index of the first tool named after after.
func sortSearch(all []*tools.Tool, after string) int {
	return sort.Search(len(all), func(i int) bool { return all[i].Name > after })
}

func encodeCursor(after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("after:" + after))
}

// rpcError maps a fault to a JSON-RPC error, as the call pipeline's audit
// rows record it (calls.CodeOf).
func rpcError(err error) *jsonrpc.Error {
	code, msg := calls.CodeOf(err)
	return &jsonrpc.Error{Code: code, Message: msg}
}
