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

// Allow records one event for key in the current window of length per and
// reports whether at most n events happened in it. An error means Redis
// could not count; callers fall back to a local limit.
func (l *RateLimiter) Allow(ctx context.Context, key string, n int, per time.Duration) (bool, error) {
	sum := sha256.Sum256([]byte(key))
	window := l.now().UnixNano() / int64(per)
	k := l.prefix + hex.EncodeToString(sum[:16]) + ":" + strconv.FormatInt(window, 10)
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	pipe := l.rdb.TxPipeline()
	incr := pipe.Incr(ctx, k)
	pipe.ExpireNX(ctx, k, per)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, err
	}
	return incr.Val() <= int64(n), nil
}
