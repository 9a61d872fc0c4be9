package auth

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/visorhq/visor/services/identity"
)

// verifyCache remembers successful argon2id verifications, keyed by the
// SHA-256 of the whole token (never the token itself) and tied to the
// stored hash they matched. It answers only "does this secret match this
// hash"; whether the key is still live is always read from the database.
type verifyCache struct {
	mu    sync.Mutex
	m     map[[32]byte]verified
	ttl   time.Duration
	limit int
	now   func() time.Time
}

type verified struct {
	hash  string
	until time.Time
}

func newVerifyCache(ttl time.Duration, limit int, now func() time.Time) *verifyCache {
	return &verifyCache{m: map[[32]byte]verified{}, ttl: ttl, limit: limit, now: now}
}

// verify reports whether secret matches hash, consulting and filling the
// cache. Failures are not cached.
func (c *verifyCache) verify(token, hash, secret string) bool {
	sum := sha256.Sum256([]byte(token))
	now := c.now()
	c.mu.Lock()
	v, ok := c.m[sum]
	c.mu.Unlock()
	if ok && v.hash == hash && now.Before(v.until) {
		return true
	}
	if !identity.VerifySecret(hash, secret) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.limit {
		c.sweep(now)
	}
	c.m[sum] = verified{hash: hash, until: now.Add(c.ttl)}
	return true
}

// sweep drops expired entries, and everything if that is not enough.
// Callers hold mu.
func (c *verifyCache) sweep(now time.Time) {
	for k, v := range c.m {
		if !now.Before(v.until) {
			delete(c.m, k)
		}
	}
	if len(c.m) >= c.limit {
		clear(c.m)
	}
}
