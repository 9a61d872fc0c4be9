package auth

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConcurrentFirstUsesOfAKeyShareOneVerification shows that a burst of
// requests with a key the replica has not verified yet runs argon2id once,
// that another token or another stored hash is verified on its own, and
// that a failed verification is shared by the requests waiting for it but
// never remembered.
func TestConcurrentFirstUsesOfAKeyShareOneVerification(t *testing.T) {
	t.Parallel()
	now := time.Now()
	c := newVerifyCache(time.Minute, 100, func() time.Time { return now })
	var calls atomic.Int32
	entered := make(chan struct{}, 100)
	release := make(chan struct{})
	c.check = func(hash, secret string) bool {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		return secret == "right"
	}

	burst := func(token, hash, secret string, n int) []bool {
		out := make([]bool, n)
		var wg sync.WaitGroup
		wg.Go(func() { out[0] = c.verify(token, hash, secret) })
		<-entered // the first is verifying; the others find it running
		for i := 1; i < n; i++ {
			wg.Go(func() { out[i] = c.verify(token, hash, secret) })
		}
		sum := sha256.Sum256([]byte(token))
		require.Eventually(t, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			v := c.running[sum]
			return v != nil && v.waiters == n-1
		}, 10*time.Second, time.Millisecond, "the other verifications wait for the first")
		close(release)
		wg.Wait()
		release = make(chan struct{})
		return out
	}

	for _, ok := range burst("vsk_a_right", "h1", "right", 50) {
		require.True(t, ok)
	}
	require.EqualValues(t, 1, calls.Load(), "one verification for 50 concurrent first uses")
	require.True(t, c.verify("vsk_a_right", "h1", "right"), "remembered")
	require.EqualValues(t, 1, calls.Load())

	// The same token against another stored hash (the key was replaced) is
	// verified again.
	close(release)
	require.True(t, c.verify("vsk_a_right", "h2", "right"))
	require.EqualValues(t, 2, calls.Load())
	<-entered
	release = make(chan struct{})

	calls.Store(0)
	for _, ok := range burst("vsk_b_wrong", "h3", "wrong", 20) {
		require.False(t, ok)
	}
	require.EqualValues(t, 1, calls.Load(), "the waiting requests share the failure")
	close(release)
	require.False(t, c.verify("vsk_b_wrong", "h3", "wrong"))
	require.EqualValues(t, 2, calls.Load(), "a failure is not remembered")
	require.Empty(t, c.running)
}
