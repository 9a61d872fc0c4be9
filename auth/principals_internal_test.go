package auth

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestCredCacheBounds shows the cache stays within its limit, forgets a
// tenant whole, and never stores a read that an event overtook.
func TestCredCacheBounds(t *testing.T) {
	t.Parallel()
	now := time.Now()
	c := newCredCache(time.Second, 10, func() time.Time { return now })
	a, b := uuid.New(), uuid.New()
	sum := func(i int) [32]byte { return sha256.Sum256(fmt.Appendf(nil, "token-%d", i)) }
	for i := range 25 {
		_, epoch, _ := c.principal(a, sum(i))
		c.putPrincipal(a, sum(i), identity.Principal{TenantID: a}, time.Time{}, epoch)
		require.LessOrEqual(t, c.n, 10)
	}
	_, epoch, _ := c.principal(b, sum(0))
	c.putPrincipal(b, sum(0), identity.Principal{TenantID: b}, time.Time{}, epoch)
	_, _, ok := c.principal(b, sum(0))
	require.True(t, ok)

	c.forget(b)
	_, _, ok = c.principal(b, sum(0))
	require.False(t, ok, "forgotten with its tenant")
	_, _, ok = c.principal(a, sum(24))
	require.True(t, ok, "other tenants stay")

	_, epoch, _ = c.principal(b, sum(1))
	c.forget(b) // an event arrives while the request reads Postgres
	c.putPrincipal(b, sum(1), identity.Principal{TenantID: b}, time.Time{}, epoch)
	_, _, ok = c.principal(b, sum(1))
	require.False(t, ok, "a read overtaken by an event is not cached")

	_, epoch, _ = c.principal(b, sum(2))
	c.putPrincipal(b, sum(2), identity.Principal{TenantID: b}, now.Add(time.Millisecond), epoch)
	now = now.Add(time.Millisecond)
	_, _, ok = c.principal(b, sum(2))
	require.False(t, ok, "never past the credential's expiry")

	_, epoch, _ = c.principal(a, sum(3))
	c.putPrincipal(a, sum(3), identity.Principal{TenantID: a}, time.Time{}, epoch)
	now = now.Add(time.Second)
	_, _, ok = c.principal(a, sum(3))
	require.False(t, ok, "never past the TTL")
}
