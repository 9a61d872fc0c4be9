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
//
// Concurrent first uses of one token share one verification: a client
// that opens many requests at once with a new key makes the replica run
// argon2id (19 MiB, deliberately slow) once, not once per request.
type verifyCache struct {
	mu      sync.Mutex
	m       map[[32]byte]verified
	running map[[32]byte]*verifying
	ttl     time.Duration
	limit   int
	now     func() time.Time
	check   func(hash, secret string) bool // identity.VerifySecret
}

type verified struct {
	hash  string
	until time.Time
}

// verifying is a verification in progress; done is closed when ok is set.
type verifying struct {
	hash    string
	done    chan struct{}
	ok      bool
	waiters int // requests waiting for it (read by tests)
}

func newVerifyCache(ttl time.Duration, limit int, now func() time.Time) *verifyCache {
	return &verifyCache{m: map[[32]byte]verified{}, running: map[[32]byte]*verifying{}, ttl: ttl, limit: limit, now: now,
		check: identity.VerifySecret}
}

// verify reports whether secret matches hash, consulting and filling the
// cache. Failures are not cached; a verification of the same token and
// hash already running is waited for instead of run again.
func (c *verifyCache) verify(token, hash, secret string) bool {
	sum := sha256.Sum256([]byte(token))
	now := c.now()
	c.mu.Lock()
	if v, ok := c.m[sum]; ok && v.hash == hash && now.Before(v.until) {
		c.mu.Unlock()
		return true
	}
	if v, ok := c.running[sum]; ok && v.hash == hash {
		v.waiters++
		c.mu.Unlock()
		<-v.done
		return v.ok
	}
	v := &verifying{hash: hash, done: make(chan struct{})}
	c.running[sum] = v
	c.mu.Unlock()

	defer func() {
		c.mu.Lock()
		if c.running[sum] == v {
			delete(c.running, sum)
		}
		c.mu.Unlock()
		close(v.done)
	}()
	if v.ok = c.check(hash, secret); !v.ok {
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
