package upstreams

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// pool keeps one warm session per server on this replica (per server and
// member, for a server with a token per member), of the server's current
// version; a session of an older version is closed when the new one opens.
type pool struct {
	mu       sync.Mutex
	sessions map[poolKey]*kept
}

// poolKey is a server's id and whose token its session carries (uuid.Nil:
// the tenant's, or none).
type poolKey struct{ server, member uuid.UUID }

type kept struct {
	version int64
	// ready is closed once sess or err is set.
	ready    chan struct{}
	sess     Session
	err      error
	lastUsed time.Time
}

func newPool() *pool { return &pool{sessions: map[poolKey]*kept{}} }

// get returns the kept session of srv's version, opening one with open
// when there is none. Concurrent callers share one open.
func (p *pool) get(ctx context.Context, srv Server, member uuid.UUID, open func(context.Context) (Session, error)) (Session, error) {
	key := poolKey{srv.ID, member}
	p.mu.Lock()
	k, ok := p.sessions[key]
	if ok && k.version != srv.Version {
		go closeKept(k)
		ok = false
	}
	if !ok {
		k = &kept{version: srv.Version, ready: make(chan struct{})}
		p.sessions[key] = k
		p.mu.Unlock()
		k.sess, k.err = open(ctx)
		close(k.ready)
		if k.err != nil {
			p.drop(key, k)
		}
		p.touch(k)
		return k.sess, k.err
	}
	p.mu.Unlock()
	select {
	case <-k.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.touch(k)
	return k.sess, k.err
}

func (p *pool) touch(k *kept) {
	p.mu.Lock()
	k.lastUsed = time.Now()
	p.mu.Unlock()
}

// drop forgets k (when it is still the server's session) and closes it: a
// session whose call failed at the transport is not reused.
func (p *pool) drop(key poolKey, k *kept) {
	p.mu.Lock()
	if p.sessions[key] == k {
		delete(p.sessions, key)
	}
	p.mu.Unlock()
	go closeKept(k)
}

// forget closes the server's sessions, if any.
func (p *pool) forget(id uuid.UUID) {
	p.mu.Lock()
	var old []*kept
	for key, k := range p.sessions {
		if key.server == id {
			old = append(old, k)
			delete(p.sessions, key)
		}
	}
	p.mu.Unlock()
	for _, k := range old {
		go closeKept(k)
	}
}

// forgetMember closes the server's session carrying member's token.
func (p *pool) forgetMember(id, member uuid.UUID) {
	key := poolKey{id, member}
	p.mu.Lock()
	k, ok := p.sessions[key]
	delete(p.sessions, key)
	p.mu.Unlock()
	if ok {
		go closeKept(k)
	}
}

// reap closes the sessions unused for idle.
func (p *pool) reap(idle time.Duration) {
	p.mu.Lock()
	var old []*kept
	for id, k := range p.sessions {
		select {
		case <-k.ready:
		default:
			continue // still opening
		}
		if time.Since(k.lastUsed) > idle {
			old = append(old, k)
			delete(p.sessions, id)
		}
	}
	p.mu.Unlock()
	for _, k := range old {
		closeKept(k)
	}
}

func (p *pool) closeAll() {
	p.mu.Lock()
	all := p.sessions
	p.sessions = map[poolKey]*kept{}
	p.mu.Unlock()
	for _, k := range all {
		closeKept(k)
	}
}

func closeKept(k *kept) {
	<-k.ready
	if k.sess != nil {
		_ = k.sess.Close()
	}
}
