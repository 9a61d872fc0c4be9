package mcp

import (
	"encoding/json"
	"net/http"
	"time"
)

// ending says why the server ended a stream, in words a client can act on.
type ending struct {
	Reason  string `json:"reason"`  // shutdown, credential_revoked
	Message string `json:"message"` // what to do
	Retry   bool   `json:"retry"`   // whether opening the stream again can succeed
}

var (
	endShutdown = ending{Reason: "shutdown", Retry: true,
		Message: "this server is shutting down; open the stream again (another replica takes it)"}
	endRevoked = ending{Reason: "credential_revoked",
		Message: "the credential that opened this stream was revoked or expired; authenticate again before reopening it"}
)

// metaEnding is the _meta key that carries an ending.
const metaEnding = "visor/streamEnded"

// goodbye ends a listen stream the way the protocol ends a subscription
// gracefully: the listen request's result, here with the reason in its
// _meta. It is written past the endpoint's life (a shutdown has cut that
// short), with finishTimeout, and not at all once a write failed.
func (s *listenStream) goodbye(e ending) {
	id := json.RawMessage(s.id)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"resultType": "complete",
		"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": id, metaEnding: e}}})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done && !s.intact {
		return
	}
	s.done = true
	writeLast(s.w, s.rc, body)
}

// goodbyeLegacy tells a legacy GET stream's client why the server ended it,
// as a notification in Visor's own namespace (clients that do not know it
// ignore it) after the SDK finished writing the stream. Only a stream the
// SDK opened as an event stream gets it.
func goodbyeLegacy(w http.ResponseWriter, rc *http.ResponseController, e ending) {
	if w.Header().Get("Content-Type") != "text/event-stream" {
		return
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/visor/stream_ended", "params": e})
	writeLast(w, rc, body)
}

// writeLast writes one last event within finishTimeout.
func writeLast(w http.ResponseWriter, rc *http.ResponseController, body []byte) {
	_ = rc.SetWriteDeadline(time.Now().Add(finishTimeout))
	if _, err := w.Write([]byte("event: message\ndata: " + string(body) + "\n\n")); err == nil {
		_ = rc.Flush()
	}
}

// isClosing reports whether Close was called.
func (h *Handler) isClosing() bool {
	select {
	case <-h.closing:
		return true
	default:
		return false
	}
}
