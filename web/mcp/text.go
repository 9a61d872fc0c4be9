package mcp

import (
	"encoding/json"
	"net/http"
	"time"

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
		e := audit.Entry{ID: audit.NewID(), TenantID: p.TenantID, PrincipalKind: principalKind(p), PrincipalID: p.ID(),
			Tool: validtext.Storable(pk.Params.Name), Outcome: audit.OutcomeRefused, Code: code, Event: tools.EventInvalidText,
			Message: msg, At: time.Now()}
		note, _ := r.Context().Value(callNoteKey{}).(*callNote)
		outcome := e.Outcome
		if rerr := h.audit.Record(r.Context(), e); rerr != nil {
			h.log.ErrorContext(r.Context(), "audit record failed", "err", rerr)
			code, msg, outcome = jsonrpc.CodeInternalError, "the audit trail is unavailable; retry later", audit.OutcomeFailed
		}
		h.record(note, e.Tool, outcome, e.Event, time.Since(e.At))
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
