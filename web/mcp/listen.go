package mcp

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// serveListen holds a well-formed 2026-07-28 subscriptions/listen request
// that subscribes to tools/list_changed — the only list Visor changes —
// without an SDK session. An idle listen stream is then just its HTTP
// request: no per-stream SDK session, JSON-RPC connection or goroutines, so
// a replica can hold tens of thousands. Anything else about the request
// (a malformed _meta, a header mismatch, a filter without tools) goes to the
// SDK, which validates and answers it. It reports whether it answered.
func (h *Handler) serveListen(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek) bool {
	const version = "2026-07-28"
	if pk.Method != "subscriptions/listen" || r.Header.Get("Mcp-Method") != pk.Method || r.Header.Get("Mcp-Name") != "" ||
		r.Header.Get("Mcp-Protocol-Version") != version || pk.Params.Meta.Version != version ||
		!isObject(pk.Params.Meta.Capabilities) || (pk.Params.Meta.ClientInfo != nil && !isObject(pk.Params.Meta.ClientInfo)) ||
		len(pk.ID) == 0 || string(pk.ID) == "null" || pk.Params.Notifications == nil || !pk.Params.Notifications.ToolsListChanged ||
		!acceptsBoth(r.Header.Values("Accept")) || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return false
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	s := &listenStream{p: p, w: w, f: flusher, id: pk.ID, acked: make(chan struct{}), revoked: make(chan struct{})}
	// Registered before the acknowledgment: once the client hears it, every
	// later change to its tools is announced on this stream.
	unregister := h.streams.Open(r.Context(), s)
	defer func() {
		unregister()
		s.close()
	}()
	err := s.write(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` +
		string(pk.ID) + `},"notifications":{"toolsListChanged":true}}}`)
	close(s.acked)
	if err != nil {
		return true
	}
	select {
	case <-r.Context().Done():
	case <-h.closing:
	case <-s.revoked:
	}
	return true
}

func isObject(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func acceptsBoth(values []string) bool {
	all := strings.ToLower(strings.Join(values, ","))
	return strings.Contains(all, "*/*") || (strings.Contains(all, "application/json") && strings.Contains(all, "text/event-stream"))
}

// listenStream is a held subscriptions/listen response.
type listenStream struct {
	p  identity.Principal
	id []byte // the listen request's JSON-RPC id, as sent

	mu   sync.Mutex
	w    http.ResponseWriter
	f    http.Flusher
	done bool

	acked      chan struct{} // closed once the acknowledgment was written
	revoked    chan struct{} // closed by Close
	revokeOnce sync.Once
}

var _ live.Stream = (*listenStream)(nil)

var errStreamClosed = errors.New("listen stream closed")

func (s *listenStream) Principal() identity.Principal { return s.p }

// NotifyToolsChanged writes notifications/tools/list_changed, tagged with
// the listen request's id, on this stream only, after the acknowledgment.
func (s *listenStream) NotifyToolsChanged(ctx context.Context) error {
	select {
	case <-s.acked:
	case <-s.revoked:
		return errStreamClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.write(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` +
		string(s.id) + `}}}`)
}

func (s *listenStream) write(msg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errStreamClosed
	}
	if _, err := s.w.Write([]byte("event: message\ndata: " + msg + "\n\n")); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// Close ends the response because the stream's credential was revoked: no
// write happens after it, and serveListen returns, which ends the HTTP
// response cleanly.
func (s *listenStream) Close() {
	s.close()
	s.revokeOnce.Do(func() { close(s.revoked) })
}

// close stops writes once the request has ended.
func (s *listenStream) close() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}
