package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// serveListen holds a well-formed 2026-07-28 subscriptions/listen request
// that subscribes to tools/list_changed — the only list Visor changes —
// without an SDK session. An idle listen stream is then just its HTTP
// request: no per-stream SDK session, JSON-RPC connection or goroutines, so
// a replica can hold tens of thousands. Anything else about the request
// (a malformed _meta, a header mismatch, a filter without tools) goes to the
// SDK, which validates and answers it. It reports whether it answered; the
// stream is then registered and acknowledged, and wait (nil when the
// stream already ended) holds it until it ends. wait keeps none of the
// request but its context's end, so it can run after the middleware chain
// returned (server.Park).
func (h *Handler) serveListen(w http.ResponseWriter, r *http.Request, p identity.Principal, pk *peek) (wait func(), ok bool) {
	const version = Stateless
	if pk.Method != "subscriptions/listen" || r.Header.Get("Mcp-Method") != pk.Method || r.Header.Get("Mcp-Name") != "" ||
		r.Header.Get("Mcp-Protocol-Version") != version || pk.Params.Meta.Version != version ||
		!isObject(pk.Params.Meta.Capabilities) || (pk.Params.Meta.ClientInfo != nil && !isObject(pk.Params.Meta.ClientInfo)) ||
		len(pk.ID) == 0 || string(pk.ID) == "null" || pk.Params.Notifications == nil || !pk.Params.Notifications.ToolsListChanged ||
		!acceptsBoth(r.Header.Values("Accept")) || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return nil, false
	}
	if _, ok := w.(http.Flusher); !ok {
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	// echo reuses its response for later requests once the chain returns:
	// the stream writes on the connection's own.
	if er, ok := w.(*echo.Response); ok {
		w = er.Writer
	}
	s := &listenStream{p: p, w: w, rc: http.NewResponseController(w), id: pk.ID, life: h.life,
		acked: make(chan struct{}), ended: make(chan struct{})}
	// Registered before the acknowledgment: once the client hears it, every
	// later change to its tools is announced on this stream.
	unregister := h.streams.Open(r.Context(), s)
	end := func() {
		unregister()
		s.finish()
	}
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	err := s.write(ctx, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+
		string(pk.ID)+`},"notifications":{"toolsListChanged":true}}}`)
	cancel()
	close(s.acked)
	if err != nil {
		if errors.Is(err, errInterrupted) && h.isClosing() {
			s.goodbye(endShutdown) // the acknowledgment went out whole
		}
		end()
		return nil, true
	}
	gone := r.Context().Done()
	return func() {
		defer end()
		select {
		case <-gone:
		case <-h.closing:
			s.goodbye(endShutdown)
		case <-s.ended:
			if s.revoked.Load() {
				s.goodbye(endRevoked)
			}
		}
	}, true
}

func isObject(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func acceptsBoth(values []string) bool {
	all := strings.ToLower(strings.Join(values, ","))
	return strings.Contains(all, "*/*") || (strings.Contains(all, "application/json") && strings.Contains(all, "text/event-stream"))
}

// writeTimeout bounds a write that has no deadline of its own (the
// acknowledgment), and finishTimeout the end of a response, so that a
// client that stopped reading holds no handler, and no shutdown, for long.
const (
	writeTimeout  = 10 * time.Second
	finishTimeout = time.Second
)

// listenStream is a held subscriptions/listen response.
type listenStream struct {
	p    identity.Principal
	id   []byte // the listen request's JSON-RPC id, as sent
	rc   *http.ResponseController
	life context.Context // the endpoint's: ends on shutdown

	mu   sync.Mutex // one write at a time
	w    http.ResponseWriter
	done bool
	// intact is set when the write that ended the stream went out whole
	// but was interrupted (a shutdown): a last event may still follow.
	intact bool

	acked   chan struct{} // closed once the acknowledgment was written (or failed)
	ended   chan struct{} // closed by end: the credential was revoked, or a write failed
	endOnce sync.Once
	revoked atomic.Bool // Close ended it: the credential was revoked
}

var _ live.Stream = (*listenStream)(nil)

var errStreamClosed = errors.New("listen stream closed")

// errInterrupted marks a write that completed but whose context ended (or
// the endpoint closed) meanwhile.
var errInterrupted = errors.New("write interrupted")

func (s *listenStream) Principal() identity.Principal { return s.p }

// NotifyToolsChanged writes notifications/tools/list_changed, tagged with
// the listen request's id, on this stream only, after the acknowledgment,
// within ctx.
func (s *listenStream) NotifyToolsChanged(ctx context.Context) error {
	select {
	case <-s.acked:
	case <-s.ended:
		return errStreamClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.write(ctx, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+
		string(s.id)+`}}}`)
}

// write writes one event by ctx's deadline; ctx ending or the endpoint
// closing aborts it. A write that fails ends the stream: the response is
// broken, and serveListen returns.
func (s *listenStream) write(ctx context.Context, msg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errStreamClosed
	}
	err := withDeadline(ctx, s.life, s.rc, func() error {
		if _, err := s.w.Write([]byte("event: message\ndata: " + msg + "\n\n")); err != nil {
			return err
		}
		return s.rc.Flush()
	})
	if err != nil {
		s.done = true
		s.intact = errors.Is(err, errInterrupted)
		s.end()
	}
	return err
}

// withDeadline runs write with the connection's write deadline at ctx's
// (writeTimeout when it has none), cut short when ctx or life (the
// endpoint's, ended on shutdown) ends. An interrupted write is an error
// even if it completed: the connection's deadline may be past by then.
func withDeadline(ctx, life context.Context, rc *http.ResponseController, write func() error) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(writeTimeout)
	}
	_ = rc.SetWriteDeadline(deadline) // only test recorders lack it
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopLife := context.AfterFunc(life, cancel)
	defer stopLife()
	stop := context.AfterFunc(ctx, func() { _ = rc.SetWriteDeadline(time.Now()) })
	err := write()
	if !stop() && err == nil {
		err = fmt.Errorf("%w: %w", errInterrupted, context.Cause(ctx))
	}
	if err == nil {
		_ = rc.SetWriteDeadline(time.Time{})
	}
	return err
}

// Close ends the response because the stream's credential was revoked: no
// write happens after it, and serveListen returns, which ends the HTTP
// response cleanly.
func (s *listenStream) Close() {
	s.revoked.Store(true)
	s.end()
}

func (s *listenStream) end() { s.endOnce.Do(func() { close(s.ended) }) }

// finish stops writes once serveListen returns. A write still in flight to
// a client that stopped reading is cut short, and the end of the response
// gets finishTimeout.
func (s *listenStream) finish() {
	if !s.mu.TryLock() {
		_ = s.rc.SetWriteDeadline(time.Now())
		s.mu.Lock()
	}
	s.done = true
	s.mu.Unlock()
	_ = s.rc.SetWriteDeadline(time.Now().Add(finishTimeout))
}

// MayPark reports whether r may be a listen request this endpoint holds,
// from its request line and headers alone: one the server should run so
// that its wait can park outside the middleware chain (server.ParkWhen).
func MayPark(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "subscriptions/listen"
}
