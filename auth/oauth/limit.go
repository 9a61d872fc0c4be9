package oauth

import (
	"sync"
	"time"
)

// Limit allows N events per window Per.
type Limit struct {
	N   int
	Per time.Duration
}

// limiter counts events per key in fixed windows, in this replica's memory.
// Keys always start with the tenant id.
type limiter struct {
	mu    sync.Mutex
	limit Limit
	win   map[string]*window
	now   func() time.Time
}

type window struct {
	start time.Time
	n     int
}

func newLimiter(l Limit) *limiter {
	return &limiter{limit: l, win: map[string]*window{}, now: time.Now}
}

// allow records an event for key and reports whether it is within the limit.
func (l *limiter) allow(key string) bool {
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
