package auth

import "time"

// SetClock makes r read time from now, for tests of the cache's TTL.
func SetClock(r *Resolver, now func() time.Time) {
	r.now = now
	r.cache.now = now
	r.verified.now = now
}
