package oauth

import (
	"context"
	"sync"
	"time"
)

// Limit allows N events per window Per.
type Limit struct {
	N   int
	Per time.Duration
}

// SharedLimiter counts events across replicas (storage/redisx.RateLimiter).
type SharedLimiter interface {
	Allow(ctx context.Context, key string, n int, per time.Duration) (bool, error)
}

// limiter enforces one Limit per key. It counts in the shared limiter when
// there is one and it answers, and otherwise in this replica's memory, so
// losing Redis weakens a limit (per replica) but never lifts it. Keys
// always start with the tenant id.
type limiter struct {
	name   string
	limit  Limit
	shared SharedLimiter
	mu     sync.Mutex
	win    map[string]*window
	now    func() time.Time
}

type window struct {
	start time.Time
	n     int
}

func newLimiter(name string, l Limit, shared SharedLimiter) *limiter {
	return &limiter{name: name, limit: l, shared: shared, win: map[string]*window{}, now: time.Now}
}

// allow records an event for key and reports whether it is within the limit.
func (l *limiter) allow(ctx context.Context, key string) bool {
	if l.shared != nil {
		if ok, err := l.shared.Allow(ctx, l.name+"|"+key, l.limit.N, l.limit.Per); err == nil {
			return ok
		}
	}
	return l.allowLocal(key)
}

func (l *limiter) allowLocal(key string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.win) > 50_000 {
		for k, w := range l.win {
			if now.Sub(w.start) >= l.limit.Per {
				delete(l.win, k)
			}
		}
	}
	w := l.win[key]
	if w == nil || now.Sub(w.start) >= l.limit.Per {
		w = &window{start: now}
		l.win[key] = w
	}
	w.n++
	return w.n <= l.limit.N
}
