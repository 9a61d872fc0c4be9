package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/visorhq/visor/services/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ticker is a service with one goroutine that runs until Stop.
type ticker struct {
	lifecycle.Base
	runs    atomic.Int32
	stopped chan struct{}
}

func newTicker() *ticker { return &ticker{stopped: make(chan struct{})} }

func (s *ticker) Start(ctx context.Context) error {
	return s.Base.Start(ctx, func(ctx context.Context) {
		s.runs.Add(1)
		<-ctx.Done()
		close(s.stopped)
	})
}

type key struct{}

func TestStartRunsOnceAndStopIsIdempotent(t *testing.T) {
	t.Parallel()
	s := newTicker()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	require.NoError(t, s.Start(ctx))
	require.ErrorIs(t, s.Start(ctx), lifecycle.ErrStarted)

	cancel() // the caller's context ending does not stop the service
	select {
	case <-s.stopped:
		t.Fatal("the service stopped with its caller's context")
	default:
	}
	s.Stop()
	<-s.stopped
	s.Stop()
	require.ErrorIs(t, s.Start(context.Background()), lifecycle.ErrStarted, "a stopped service does not restart")
	require.EqualValues(t, 1, s.runs.Load())
}

func TestServiceContextKeepsValues(t *testing.T) {
	t.Parallel()
	var b lifecycle.Base
	got := make(chan any, 1)
	require.NoError(t, b.Start(context.WithValue(context.Background(), key{}, "v"), func(ctx context.Context) { got <- ctx.Value(key{}) }))
	require.Equal(t, "v", <-got)
	b.Stop()
}

func TestStopBeforeStartPreventsStart(t *testing.T) {
	t.Parallel()
	s := newTicker()
	s.Stop()
	require.ErrorIs(t, s.Start(context.Background()), lifecycle.ErrStarted)
	require.Nil(t, s.Stopping())
}

func TestOnStopRunsBeforeTheContextEnds(t *testing.T) {
	t.Parallel()
	var b lifecycle.Base
	ctx, err := b.Begin(context.Background())
	require.NoError(t, err)
	var order []string
	b.OnStop(func() { order = append(order, fmt.Sprint("first registered, ctx live: ", ctx.Err() == nil)) })
	b.OnStop(func() { order = append(order, "second registered") })
	b.Go(func() { <-ctx.Done() })
	b.Stop()
	<-b.Stopping()
	require.Equal(t, []string{"second registered", "first registered, ctx live: true"}, order)
	ran := false
	b.Go(func() { ran = true })
	require.False(t, ran, "Go after Stop runs nothing")
}

// recorder is a service that notes when it starts and stops.
type recorder struct {
	name string
	log  *[]string
	fail bool
}

func (r recorder) Start(context.Context) error {
	if r.fail {
		return errors.New("no")
	}
	*r.log = append(*r.log, "start "+r.name)
	return nil
}

func (r recorder) Stop() { *r.log = append(*r.log, "stop "+r.name) }

func TestGroupStopsInReverseOrder(t *testing.T) {
	t.Parallel()
	var log []string
	var g lifecycle.Group
	ctx := context.Background()
	g.Defer(func() { log = append(log, "close pool") })
	require.NoError(t, g.Start(ctx, recorder{name: "a", log: &log}))
	require.Error(t, g.Start(ctx, recorder{name: "broken", log: &log, fail: true}))
	require.NoError(t, g.Start(ctx, recorder{name: "b", log: &log}))
	g.Stop()
	g.Stop()
	require.Equal(t, []string{"start a", "start b", "stop b", "stop a", "close pool"}, log)

	log = nil
	require.ErrorIs(t, g.Start(ctx, recorder{name: "late", log: &log}), lifecycle.ErrStarted)
	require.Equal(t, []string{"start late", "stop late"}, log, "a service started into a stopped group is stopped at once")
}

// TestStartStopStress races Start and Stop on many services and groups:
// every service runs its goroutine at most once, every Stop returns only
// when it has ended, and nothing leaks (TestMain's goleak).
func TestStartStopStress(t *testing.T) {
	t.Parallel()
	for range 200 {
		s := newTicker()
		var g lifecycle.Group
		var wg sync.WaitGroup
		var started atomic.Int32
		for i := range 8 {
			wg.Go(func() {
				switch i % 4 {
				case 0:
					if s.Start(context.Background()) == nil {
						started.Add(1)
					}
				case 1:
					s.Stop()
				case 2:
					_ = g.Start(context.Background(), s)
				case 3:
					g.Stop()
				}
			})
		}
		wg.Wait()
		s.Stop()
		g.Stop()
		require.LessOrEqual(t, s.runs.Load(), int32(1))
		if s.runs.Load() == 1 {
			<-s.stopped
		}
		require.LessOrEqual(t, started.Load(), int32(1))
	}
}
