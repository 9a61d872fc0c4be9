package rounds

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
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
	open := make(chan struct{}) // the pushes in flight hold their slots until it closes
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
			<-open
			in.Add(-1)
		})
	}
	testsignal.Until(t, 10*time.Second, time.Millisecond, "the limit's pushes in flight", func() bool { return in.Load() == 3 })
	full, cancelFull := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelFull()
	_, err := g.acquire(full, busy)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a fourth push to the busy endpoint waits")
	hold := make([]func(), 0, 3)
	for range 3 {
		r, err := g.acquire(context.Background(), other)
		require.NoError(t, err, "another endpoint has its own slots")
		hold = append(hold, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = g.acquire(ctx, other)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a full endpoint's push waits until its context ends")
	for _, r := range hold {
		r()
	}
	close(open)
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int32(3), "never more than the limit at once")
}
