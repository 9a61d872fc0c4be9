package redisx_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

type planeFixture struct {
	rdb    *redisx.Client
	prefix string
	caller *redisx.Plane
}

func newPlaneFixture(t *testing.T) planeFixture {
	rdb := redistest.New(t)
	prefix := redistest.Prefix(t)
	return planeFixture{rdb: rdb, prefix: prefix, caller: redisx.NewPlane(rdb, prefix, slog.New(slog.DiscardHandler))}
}

func (f planeFixture) worker(t *testing.T, id string, capacity int, handlers map[string]plane.Handler) *redisx.PlaneWorker {
	w := redisx.NewPlaneWorker(f.rdb, redisx.PlaneWorkerOptions{ID: id, Pools: []string{"p"}, Capacity: capacity, Prefix: f.prefix}, slog.New(slog.DiscardHandler))
	for k, h := range handlers {
		w.Handle(k, h)
	}
	require.NoError(t, w.Start(t.Context()))
	t.Cleanup(w.Stop)
	return w
}

func echo(_ context.Context, j plane.Job) (json.RawMessage, error) {
	j.Report(plane.Progress{Progress: 1, Total: 2, Message: "half"})
	return json.RawMessage(`{"worker":"` + j.Worker + `","in":` + string(j.Payload) + `}`), nil
}

func TestPlaneCallsAPoolAndOneWorker(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	f.worker(t, "w1", 2, map[string]plane.Handler{"echo": echo})
	w2 := f.worker(t, "w2", 2, map[string]plane.Handler{"echo": echo})
	var progress []plane.Progress
	out, err := f.caller.Call(t.Context(), plane.Request{Kind: "echo", Pool: "p", Tenant: uuid.New(), Payload: json.RawMessage(`7`)},
		func(p plane.Progress) { progress = append(progress, p) })
	require.NoError(t, err)
	require.Contains(t, string(out), `"in":7`)
	require.Equal(t, []plane.Progress{{Progress: 1, Total: 2, Message: "half"}}, progress)
	for range 5 { // addressed to one worker, always that worker
		out, err = f.caller.Call(t.Context(), plane.Request{Kind: "echo", Worker: w2.ID(), Tenant: uuid.New(), Payload: json.RawMessage(`1`)}, nil)
		require.NoError(t, err)
		require.Contains(t, string(out), `"worker":"w2"`)
	}
}

func TestPlaneErrorsReachTheCaller(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	f.worker(t, "w1", 1, map[string]plane.Handler{"bad": func(context.Context, plane.Job) (json.RawMessage, error) {
		return nil, fault.New(fault.Invalid, "no such language")
	}})
	_, err := f.caller.Call(t.Context(), plane.Request{Kind: "bad", Pool: "p", Payload: json.RawMessage(`{}`)}, nil)
	require.Equal(t, fault.Invalid, fault.CodeOf(err))
	require.Equal(t, "no such language", fault.Message(err))
	_, err = f.caller.Call(t.Context(), plane.Request{Kind: "unknown", Pool: "p", Payload: json.RawMessage(`{}`)}, nil)
	require.Equal(t, fault.Unavailable, fault.CodeOf(err))
	_, err = f.caller.Call(t.Context(), plane.Request{Kind: "x", Pool: "p", Payload: make(json.RawMessage, plane.MaxPayload+1)}, nil)
	require.Equal(t, fault.TooLarge, fault.CodeOf(err))
}

func TestPlaneWithoutWorkersAnswersAtOnce(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	start := time.Now()
	_, err := f.caller.Call(t.Context(), plane.Request{Kind: "echo", Pool: "p", Payload: json.RawMessage(`1`)}, nil)
	require.ErrorIs(t, err, plane.ErrNoWorker)
	_, err = f.caller.Call(t.Context(), plane.Request{Kind: "echo", Worker: "gone", Payload: json.RawMessage(`1`)}, nil)
	require.ErrorIs(t, err, plane.ErrNoWorker)
	require.Less(t, time.Since(start), time.Second)
}

// A cancelled call ends the job's context on its worker at once.
func TestPlaneCancelReachesTheWorker(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	started, ended := make(chan struct{}), make(chan time.Time, 1)
	f.worker(t, "w1", 1, map[string]plane.Handler{"sleep": func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		ended <- time.Now()
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := f.caller.Call(ctx, plane.Request{Kind: "sleep", Pool: "p", Payload: json.RawMessage(`1`)}, nil)
		errc <- err
	}()
	<-started
	at := time.Now()
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	select {
	case e := <-ended:
		require.Less(t, e.Sub(at), time.Second, "the worker saw the cancel late")
	case <-time.After(5 * time.Second):
		t.Fatal("the worker never saw the cancel")
	}
}

// A caller whose worker dies mid-job gets ErrWorkerLost within a few
// heartbeats, not a hang.
func TestPlaneDeadWorkerIsAClearError(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	w := f.worker(t, "w1", 1, map[string]plane.Handler{"hang": func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
		close(started)
		<-release // a dead worker sends nothing more, even on its way out
		return nil, nil
	}})
	errc := make(chan error, 1)
	go func() {
		_, err := f.caller.Call(t.Context(), plane.Request{Kind: "hang", Pool: "p", Payload: json.RawMessage(`1`)}, nil)
		errc <- err
	}()
	<-started
	// Simulate death: the heartbeat stops and the key expires.
	go w.Stop()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, plane.ErrWorkerLost)
	case <-time.After(3 * redisx.HeartbeatTTL):
		t.Fatal("the caller of a dead worker hung")
	}
}

// A tenant that floods the pool waits behind its own work: another
// tenant's single job is taken within the next couple of turns.
func TestPlaneTakesTurnsBetweenTenants(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	var mu sync.Mutex
	var order []string
	gate := make(chan struct{})
	var first atomic.Bool
	f.worker(t, "w1", 1, map[string]plane.Handler{"rec": func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
		if first.CompareAndSwap(false, true) {
			<-gate // hold the only slot until the queue has filled
		}
		mu.Lock()
		order = append(order, string(j.Payload))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		return json.RawMessage(`1`), nil
	}})
	flood, other := uuid.New(), uuid.New()
	var wg sync.WaitGroup
	call := func(tenant uuid.UUID, tag string) {
		defer wg.Done()
		_, err := f.caller.Call(t.Context(), plane.Request{Kind: "rec", Pool: "p", Tenant: tenant, Payload: json.RawMessage(`"` + tag + `"`)}, nil)
		require.NoError(t, err)
	}
	wg.Add(1)
	go call(flood, "A")
	require.Eventually(t, first.Load, 5*time.Second, 5*time.Millisecond)
	for range 30 {
		wg.Add(1)
		go call(flood, "A")
	}
	waitQueued(t, f, flood, 30)
	wg.Add(1)
	go call(other, "B")
	time.Sleep(100 * time.Millisecond) // B is queued behind 30 of A's
	close(gate)
	wg.Wait()
	pos := -1
	for i, tag := range order {
		if tag == `"B"` {
			pos = i
		}
	}
	require.Len(t, order, 32)
	require.LessOrEqual(t, pos, 3, "the other tenant's job waited behind the flood: %v", order)
}

func waitQueued(t *testing.T, f planeFixture, tenant uuid.UUID, n int64) {
	require.Eventually(t, func() bool {
		got, err := f.rdb.LLen(context.Background(), f.prefix+"pool:p:t:"+tenant.String()).Result()
		return err == nil && got == n
	}, 5*time.Second, 10*time.Millisecond)
}
