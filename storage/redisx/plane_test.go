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
// heartbeats, not a hang, saying whether the work had started: a worker
// that reported progress was running it.
func TestPlaneDeadWorkerIsAClearError(t *testing.T) {
	t.Parallel()
	for _, reported := range []bool{false, true} {
		f := newPlaneFixture(t)
		started := make(chan struct{})
		release := make(chan struct{})
		w := f.worker(t, "w1", 1, map[string]plane.Handler{"hang": func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
			if reported {
				j.Report(plane.Progress{Progress: 1, Message: "going"})
			}
			close(started)
			<-release // a dead worker sends nothing more, even on its way out
			return nil, nil
		}})
		errc := make(chan error, 1)
		heard := make(chan struct{}, 1)
		go func() {
			_, err := f.caller.Call(t.Context(), plane.Request{Kind: "hang", Pool: "p", Payload: json.RawMessage(`1`)},
				func(plane.Progress) { heard <- struct{}{} })
			errc <- err
		}()
		<-started
		if reported {
			<-heard
		}
		// Simulate death: the heartbeat stops and the key expires.
		go w.Stop()
		select {
		case err := <-errc:
			require.ErrorIs(t, err, plane.ErrWorkerLost)
			var lost *plane.LostError
			require.ErrorAs(t, err, &lost)
			require.Equal(t, reported, lost.Started)
			require.Equal(t, "w1", lost.Worker)
		case <-time.After(3 * redisx.HeartbeatTTL):
			t.Fatal("the caller of a dead worker hung")
		}
		close(release)
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
	waitQueued(t, f, other, 1) // B is queued behind 30 of A's
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

func (f planeFixture) workerWithRoom(t *testing.T, id string, room func(running int) bool, handlers map[string]plane.Handler) *redisx.PlaneWorker {
	w := redisx.NewPlaneWorker(f.rdb, redisx.PlaneWorkerOptions{ID: id, Pools: []string{"p"}, Capacity: 4, Prefix: f.prefix, PoolRoom: room},
		slog.New(slog.DiscardHandler))
	for k, h := range handlers {
		w.Handle(k, h)
	}
	require.NoError(t, w.Start(t.Context()))
	t.Cleanup(w.Stop)
	return w
}

// A worker without room leaves the pool's work to a worker with room,
// still serves its own queue, is refused clearly when no worker has room,
// and takes pool work again once it has room.
func TestPlaneWorkerWithoutRoomLeavesPoolWorkToOthers(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	var roomA, roomB atomic.Bool
	var runs atomic.Int64
	counted := func(ctx context.Context, j plane.Job) (json.RawMessage, error) { runs.Add(1); return echo(ctx, j) }
	a := f.workerWithRoom(t, "a", func(int) bool { return roomA.Load() }, map[string]plane.Handler{"echo": counted})
	f.workerWithRoom(t, "b", func(int) bool { return roomB.Load() }, map[string]plane.Handler{"echo": counted})
	call := func(r plane.Request) (string, error) {
		out, err := f.caller.Call(t.Context(), r, nil)
		return string(out), err
	}

	roomB.Store(true)
	for i := range 6 { // every pool job goes to b, however often a is woken
		out, err := call(plane.Request{Kind: "echo", Pool: "p", Tenant: uuid.New(), Payload: json.RawMessage(`1`)})
		require.NoError(t, err, "call %d", i)
		require.Contains(t, out, `"worker":"b"`, "call %d", i)
	}
	out, err := call(plane.Request{Kind: "echo", Worker: a.ID(), Tenant: uuid.New(), Payload: json.RawMessage(`2`)})
	require.NoError(t, err, "a full worker still serves its own queue")
	require.Contains(t, out, `"worker":"a"`)

	roomB.Store(false)
	before := runs.Load()
	tenant := uuid.New()
	start := time.Now()
	_, err = call(plane.Request{Kind: "echo", Pool: "p", Tenant: tenant, Payload: json.RawMessage(`3`), MaxWait: 700 * time.Millisecond})
	require.ErrorIs(t, err, plane.ErrBusy)
	require.Equal(t, fault.Unavailable, fault.CodeOf(err))
	require.Contains(t, fault.Message(err), "every worker stayed busy for 700ms")
	require.Less(t, time.Since(start), 5*time.Second, "the refusal comes at the request's wait, not never")
	waitQueued(t, f, tenant, 0) // withdrawn: it can never start later

	roomA.Store(true) // a has room again: it takes pool work; the refused job never runs
	out, err = call(plane.Request{Kind: "echo", Pool: "p", Tenant: uuid.New(), Payload: json.RawMessage(`4`)})
	require.NoError(t, err)
	require.Contains(t, out, `"worker":"a"`)
	require.Equal(t, before+1, runs.Load())
}

// PoolRoom hears how many pool jobs the worker is running, so a worker
// with free slots still leaves a second job in the pool while its room is
// taken by a job that has not yet ended.
func TestPlaneWorkerCountsItsRunningPoolJobs(t *testing.T) {
	t.Parallel()
	f := newPlaneFixture(t)
	release := make(chan struct{})
	var seen sync.Map
	f.workerWithRoom(t, "a", func(running int) bool { seen.Store(running, true); return running < 1 }, map[string]plane.Handler{
		"hold": func(ctx context.Context, j plane.Job) (json.RawMessage, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return json.RawMessage(`1`), nil
		}})
	tenant := uuid.New()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := f.caller.Call(t.Context(), plane.Request{Kind: "hold", Pool: "p", Tenant: tenant, Payload: json.RawMessage(`1`)}, nil)
			errs <- err
		}()
	}
	// One is taken; the other stays queued although three slots are free.
	require.Eventually(t, func() bool { _, ok := seen.Load(1); return ok }, 5*time.Second, 10*time.Millisecond)
	waitQueued(t, f, tenant, 1)
	// Sleep, not a signal: the claim is that the worker's own polls, which
	// run on its timer, leave the job queued; two of them must pass.
	time.Sleep(600 * time.Millisecond)
	waitQueued(t, f, tenant, 1)
	release <- struct{}{} // the first ends: the worker takes the second
	waitQueued(t, f, tenant, 0)
	close(release)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
}
