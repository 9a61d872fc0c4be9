package redisx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateLimiter counts events per key in fixed windows in Redis, so every
// replica shares one count. Keys are hashed: they may hold an email.
type RateLimiter struct {
	rdb    *redis.Client
	prefix string
	now    func() time.Time
}

// NewRateLimiter returns a limiter on rdb whose keys start with prefix
// (e.g. "visor:rl:").
func NewRateLimiter(rdb *redis.Client, prefix string) *RateLimiter {
	return &RateLimiter{rdb: rdb, prefix: prefix, now: time.Now}
}

// WithClock returns a copy of l that reads the time from now, which decides
// the window an event falls in (tests pin it so that a run cannot straddle
// two windows).
func (l *RateLimiter) WithClock(now func() time.Time) *RateLimiter {
	c := *l
	c.now = now
	return &c
}

// Allow records one event for key in the current window of length per and
// reports whether at most n events happened in it. An error means Redis
// could not count; callers fall back to a local limit.
func (l *RateLimiter) Allow(ctx context.Context, key string, n int, per time.Duration) (bool, error) {
	_, ok, err := l.Reserve(ctx, key, n, per)
	return ok, err
}

// Reserve is Allow for an event that may turn out not to count (a sign-in
// that succeeds is not a failed attempt): it records the event and returns
// undo, which takes it back from the window it was counted in, even after
// that window has moved on.
func (l *RateLimiter) Reserve(ctx context.Context, key string, n int, per time.Duration) (undo func(context.Context) error, ok bool, err error) {
	sum := sha256.Sum256([]byte(key))
	window := l.now().UnixNano() / int64(per)
	k := l.prefix + hex.EncodeToString(sum[:16]) + ":" + strconv.FormatInt(window, 10)
	ctx, cancel := context.WithTimeout(ctx, answerWithin)
	defer cancel()
	pipe := l.rdb.TxPipeline()
	incr := pipe.Incr(ctx, k)
	pipe.ExpireNX(ctx, k, per)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, err
	}
	return func(ctx context.Context) error { return l.refund(ctx, k) }, incr.Val() <= int64(n), nil
}

// answerWithin is how long a count may take before the caller falls back to
// its own replica's count. A busy replica or Redis can take a few hundred
// milliseconds to answer; falling back then splits a budget between
// replicas, so only an unreachable Redis should make it happen.
const answerWithin = 2 * time.Second

// decrExisting decrements a window's count only while the window still
// exists, so a late refund never leaves a count behind without an expiry.
var decrExisting = redis.NewScript(`if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0`)

func (l *RateLimiter) refund(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, answerWithin)
	defer cancel()
	return decrExisting.Run(ctx, l.rdb, []string{key}).Err()
}
