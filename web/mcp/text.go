package mcp

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/validtext"
)

// refuseText answers a POST whose body holds text Postgres cannot store (a
// NUL, invalid UTF-8, an unpaired surrogate escape) before the SDK reads it:
// a request gets JSON-RPC -32602 with its id, anything else HTTP 400 with an
// id-less error. A tools/call is audited like any refusal, its tool name
// made storable. It reports whether it answered.
func (h *Handler) refuseText(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek, body []byte) bool {
	err := validtext.JSON(body)
	if err == nil {
		return false
	}
	msg := "invalid params: the request " + err.Error() + "; send UTF-8 text without NUL characters"
	status, code, id := http.StatusOK, int64(jsonrpc.CodeInvalidParams), pk.ID
	if len(id) == 0 || validtext.JSON(id) != nil || pk.Method == "" {
		status, id = http.StatusBadRequest, nil
	}
	if pk.Method == "tools/call" {
		a := h.calls.Refuse(r.Context(), p, validtext.Storable(pk.Params.Name),
			tools.Decision{Hidden: true, Code: code, Event: tools.EventInvalidText, Reason: msg})
		note, _ := r.Context().Value(callNoteKey{}).(*callNote)
		outcome := a.Entry.Outcome
		if a.Unrecorded {
			code, msg, outcome = jsonrpc.CodeInternalError, a.Failure, audit.OutcomeFailed
		}
		h.record(note, a.Entry.Tool, outcome, a.Entry.Event, a.Elapsed)
	}
	answer := map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": code, "message": msg}}
	if id != nil {
		answer["id"] = id
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(answer)
	return true
}
