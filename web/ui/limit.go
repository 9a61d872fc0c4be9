package ui

import (
	"context"
	"sync"
	"time"
)

// postWindow is the window of the per-member post limit.
const postWindow = time.Minute

// localCounts counts posts in this replica's memory, for when the shared
// limiter does not answer: losing Redis weakens the limit (to one budget
// per replica) but never lifts it.
type localCounts struct {
	mu  sync.Mutex
	win map[string]*postCount
	now func() time.Time
}

type postCount struct {
	start time.Time
	n     int
}

// allow counts an event for key and reports whether it is within n per
// postWindow.
func (l *localCounts) allow(key string, n int) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.win) > 50_000 {
		for k, w := range l.win {
			if now.Sub(w.start) >= postWindow {
				delete(l.win, k)
			}
		}
	}
	w := l.win[key]
	if w == nil || now.Sub(w.start) >= postWindow {
		w = &postCount{start: now}
		l.win[key] = w
	}
	w.n++
	return w.n <= n
}

// allowPost counts one form post of key against the member's budget, in
// the shared limiter when it answers and in memory otherwise.
func (d *Dashboard) allowPost(ctx context.Context, key string) bool {
	if d.d.Limiter != nil {
		ok, err := d.d.Limiter.Allow(ctx, key, d.d.PostLimit, postWindow)
		if err == nil {
			return ok
		}
		d.d.Logger.WarnContext(ctx, "the shared rate limiter did not answer; counting in memory", "err", err)
	}
	return d.local.allow(key, d.d.PostLimit)
}
