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
}

func (s *sessions) bind(id, owner string, ss *sdk.ServerSession) {
	s.mu.Lock()
	s.m[id] = binding{owner: owner, session: ss}
	s.mu.Unlock()
	go func() { // forget the binding when the session ends, however it ends
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.m, id)
		s.mu.Unlock()
	}()
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
// -32601. A GET stream is registered with the live hub while it is open.
func (h *Handler) serveLegacy(w http.ResponseWriter, r *http.Request, p identity.Principal) {
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
	if pk, _ := r.Context().Value(peekKey{}).(*peek); r.Method == http.MethodPost && pk != nil && unknownMethod(w, pk) {
		return
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
			// The end of the response gets finishTimeout, so a client
			// that stopped reading holds no shutdown for long.
			_ = rc.SetWriteDeadline(time.Now().Add(finishTimeout))
		}()
	}
	h.legacy.ServeHTTP(w, r)
}
