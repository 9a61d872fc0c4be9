package rounds

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGroupSharesSetsAndAnswersEachCall: calls made while a set is in
// flight form the next set, run once; each caller gets its own result;
// a caller that gives up is answered at once and the others are not.
func TestGroupSharesSetsAndAnswersEachCall(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var sets [][]int
	g := newGroup(func(_ context.Context, calls []*call[int, int]) {
		var set []int
		for _, c := range calls {
			set = append(set, c.in)
			c.out = c.in * 2
		}
		mu.Lock()
		sets = append(sets, set)
		first := len(sets) == 1
		mu.Unlock()
		if first {
			<-release // hold the first set until every other call waits
		}
	})
	first := make(chan int)
	go func() {
		out, err := g.do(context.Background(), 0)
		require.NoError(t, err)
		first <- out
	}()
	for {
		g.mu.Lock()
		running := g.running && len(g.pending) == 0
		g.mu.Unlock()
		if running {
			break // the first set is in flight
		}
		runtime.Gosched()
	}
	const n = 50
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			out, err := g.do(context.Background(), i)
			require.NoError(t, err)
			require.Equal(t, 2*i, out)
		})
	}
	for {
		g.mu.Lock()
		waiting := len(g.pending)
		g.mu.Unlock()
		if waiting == n {
			break
		}
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.do(ctx, -1)
	require.ErrorIs(t, err, context.Canceled, "a caller that gave up is answered")
	close(release)
	require.Zero(t, <-first)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sets, 2, "the calls that waited ran as one set")
	require.Len(t, sets[1], n+1)
}
