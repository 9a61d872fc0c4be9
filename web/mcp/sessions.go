package mcp

import (
	"context"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/identity"
)

// sessions binds each legacy session to the principal that opened it.
// Legacy sessions live on the replica that created them: run replicas with
// affinity on Mcp-Session-Id (see docs/tools.md, "Replicas").
type sessions struct {
	mu sync.Mutex
	m  map[string]binding
}

type binding struct {
	owner   string
	session *sdk.ServerSession
	idle    *idleTimer
	calls   *inflight // the session's calls the endpoint is answering
}

// bind records the session's owner and closes the session once no POST has
// been served on it for timeout (none: never). The endpoint keeps this
// timer rather than the SDK because it answers some of a session's
// requests itself (serveSessionList), which the SDK never sees.
func (s *sessions) bind(id, owner string, ss *sdk.ServerSession, timeout time.Duration) {
	idle := &idleTimer{timeout: timeout}
	if timeout > 0 {
		idle.timer = time.AfterFunc(timeout, func() { _ = ss.Close() })
	}
	calls := &inflight{}
	s.mu.Lock()
	s.m[id] = binding{owner: owner, session: ss, idle: idle, calls: calls}
	s.mu.Unlock()
	go func() { // forget the binding when the session ends, however it ends
		_ = ss.Wait()
		idle.stop()
		calls.cancelAll() // as the SDK cancels its own calls of the session
		s.mu.Lock()
		delete(s.m, id)
		s.mu.Unlock()
	}()
}

// idleTimer closes a session after a time without requests: it is paused
// while any POST of the session is being served and restarts when the last
// one ends.
type idleTimer struct {
	timeout time.Duration
	mu      sync.Mutex
	refs    int
	timer   *time.Timer // nil: no timeout, or stopped for good
}

func (t *idleTimer) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil && t.refs == 0 {
		t.timer.Stop()
	}
	t.refs++
}

func (t *idleTimer) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refs--
	if t.timer != nil && t.refs == 0 {
		t.timer.Reset(t.timeout)
	}
}

func (t *idleTimer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

func (s *sessions) get(id string) (binding, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	return b, ok
}

func (s *sessions) all() []binding {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]binding, 0, len(s.m))
	for _, b := range s.m {
		out = append(out, b)
	}
	return out
}

// serveLegacy serves the session-based eras. A session id bound to another
// principal is answered exactly as an unknown one (404), so ids cannot be
// probed. A request for a method the server does not have is JSON-RPC
// -32601. A plain tools/list is answered from the list cache
// (serveSessionList), a plain tools/call by the endpoint itself
// (serveSessionCall). A GET stream is registered with the live hub while it
// is open.
func (h *Handler) serveLegacy(w http.ResponseWriter, r *http.Request, p identity.Principal, body []byte) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		h.legacy.ServeHTTP(w, r)
		return
	}
	b, ok := h.sessions.get(id)
	if !ok || b.owner != owner(p) {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost {
		b.idle.begin()
		defer b.idle.end()
		pk, _ := r.Context().Value(peekKey{}).(*peek)
		if pk != nil && (unknownMethod(w, pk) || h.serveSessionList(w, r, p, pk, body, b) || h.serveSessionCall(w, r, p, pk, body, b)) {
			return
		}
		if pk != nil && pk.Method == "notifications/cancelled" {
			cancelCall(b, body)
		}
	}
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-Id") == "" {
		ctx, stop := context.WithCancel(r.Context())
		defer stop()
		r = r.WithContext(ctx)
		rc := http.NewResponseController(w)
		st := &stream{p: p, session: b.session, rc: rc, life: h.life, stop: stop}
		unregister := h.streams.Open(ctx, st)
		defer func() {
			unregister()
			select {
			case <-h.closing:
				goodbyeLegacy(w, rc, endShutdown)
			default:
				if st.revoked.Load() {
					goodbyeLegacy(w, rc, endRevoked)
				}
			}
			// The end of the response gets finishTimeout, so a client
			// that stopped reading holds no shutdown for long.
			_ = rc.SetWriteDeadline(time.Now().Add(finishTimeout))
		}()
	}
	h.legacy.ServeHTTP(w, r)
}
