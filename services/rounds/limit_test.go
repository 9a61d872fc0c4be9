package rounds

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestGatesBoundPushesPerEndpoint: at most limit pushes to one endpoint
// are in flight at once, another endpoint is not held up by it, and a
// push whose context ends while waiting gives up.
func TestGatesBoundPushesPerEndpoint(t *testing.T) {
	t.Parallel()
	g := newGates(3)
	busy, other := uuid.New(), uuid.New()
	var in, peak atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			release, err := g.acquire(context.Background(), busy)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			n := in.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			in.Add(-1)
		})
	}
	hold := make([]func(), 0, 3)
	for range 3 {
		r, err := g.acquire(context.Background(), other)
		require.NoError(t, err, "another endpoint has its own slots")
		hold = append(hold, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := g.acquire(ctx, other)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a full endpoint's push waits until its context ends")
	for _, r := range hold {
		r()
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int32(3), "never more than the limit at once")
}
