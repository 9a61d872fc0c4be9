package upstreams

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// pool keeps one warm session per server on this replica, of the server's
// current version; a session of an older version is closed when the new
// one opens.
type pool struct {
	mu       sync.Mutex
	sessions map[uuid.UUID]*kept
}

type kept struct {
	version int64
	// ready is closed once sess or err is set.
	ready    chan struct{}
	sess     Session
	err      error
	lastUsed time.Time
}

func newPool() *pool { return &pool{sessions: map[uuid.UUID]*kept{}} }

// get returns the kept session of srv's version, opening one with open
// when there is none. Concurrent callers share one open.
func (p *pool) get(ctx context.Context, srv Server, open func(context.Context) (Session, error)) (Session, error) {
	p.mu.Lock()
	k, ok := p.sessions[srv.ID]
	if ok && k.version != srv.Version {
		go closeKept(k)
		ok = false
	}
	if !ok {
		k = &kept{version: srv.Version, ready: make(chan struct{})}
		p.sessions[srv.ID] = k
		p.mu.Unlock()
		k.sess, k.err = open(ctx)
		close(k.ready)
		if k.err != nil {
			p.drop(srv.ID, k)
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
func (p *pool) drop(id uuid.UUID, k *kept) {
	p.mu.Lock()
	if p.sessions[id] == k {
		delete(p.sessions, id)
	}
	p.mu.Unlock()
	go closeKept(k)
}

// forget closes the server's session, if any.
func (p *pool) forget(id uuid.UUID) {
	p.mu.Lock()
	k, ok := p.sessions[id]
	delete(p.sessions, id)
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
	p.sessions = map[uuid.UUID]*kept{}
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
