package oauth

import (
	"context"
	"net/netip"
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
	// Reserve counts an event like Allow and returns undo, which takes it
	// back (an attempt that turned out not to count).
	Reserve(ctx context.Context, key string, n int, per time.Duration) (undo func(context.Context) error, ok bool, err error)
}

// Limiter enforces one Limit per key. It counts in the shared limiter when
// there is one and it answers, and otherwise in this replica's memory, so
// losing Redis weakens a limit (per replica) but never lifts it. Keys
// always start with the tenant id.
type Limiter struct {
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

// NewLimiter returns a Limiter enforcing l. name starts its keys in the
// shared limiter, so limits sharing one Redis do not mix their counts.
func NewLimiter(name string, l Limit, shared SharedLimiter) *Limiter {
	return &Limiter{name: name, limit: l, shared: shared, win: map[string]*window{}, now: time.Now}
}

// Allow records an event for key and reports whether it is within the limit.
func (l *Limiter) Allow(ctx context.Context, key string) bool {
	if l.shared != nil {
		if ok, err := l.shared.Allow(ctx, l.name+"|"+key, l.limit.N, l.limit.Per); err == nil {
			return ok
		}
	}
	return l.allowLocal(key)
}

// Reserve records an event for key like Allow and returns undo, which takes
// the event back: callers count an attempt before its outcome is known (so
// concurrent attempts cannot overrun the limit) and undo the ones that
// should not count. undo is never nil.
func (l *Limiter) Reserve(ctx context.Context, key string) (undo func(), ok bool) {
	if l.shared != nil {
		if u, ok, err := l.shared.Reserve(ctx, l.name+"|"+key, l.limit.N, l.limit.Per); err == nil {
			return func() {
				// Best effort: a refund that fails leaves one extra event
				// counted until the window ends.
				_ = u(context.WithoutCancel(ctx))
			}, ok
		}
	}
	w, ok := l.countLocal(key)
	return func() {
		l.mu.Lock()
		w.n--
		l.mu.Unlock()
	}, ok
}

func (l *Limiter) allowLocal(key string) bool {
	_, ok := l.countLocal(key)
	return ok
}

// countLocal counts an event in key's current window in memory.
func (l *Limiter) countLocal(key string) (*window, bool) {
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
	return w, w.n <= l.limit.N
}

// SourceKey is the address a per-source limit counts against: the client
// address (c.RealIP(), which believes X-Forwarded-For only from trusted
// proxies), with an IPv6 address reduced to its /64, since one host is
// routinely given a whole /64 and could otherwise take a fresh address for
// every attempt.
func SourceKey(realIP string) string {
	a, err := netip.ParseAddr(realIP)
	if err != nil {
		return realIP
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

type sourceKeyCtx struct{}

// WithSource returns ctx carrying the request's source address (SourceKey),
// for limits counted below the endpoints (metadata document fetches).
func WithSource(ctx context.Context, source string) context.Context {
	return context.WithValue(ctx, sourceKeyCtx{}, source)
}

// sourceFrom returns the source address WithSource recorded, or "" when
// there is none.
func sourceFrom(ctx context.Context) string {
	s, _ := ctx.Value(sourceKeyCtx{}).(string)
	return s
}
