package computer_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// cappedDriver holds sessions in memory, at most max, as a browser
// manager does; a start beyond its cap is refused.
type cappedDriver struct {
	worker string
	max    int

	mu      sync.Mutex
	held    map[uuid.UUID]bool
	refused int
}

func (d *cappedDriver) Held() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.held) }

func (d *cappedDriver) Start(_ context.Context, s computer.Spec) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.held) >= d.max {
		d.refused++
		return "", fault.New(fault.Unavailable, "every browser session slot of this worker is in use")
	}
	d.held[s.Session] = true
	return d.worker, nil
}

func (d *cappedDriver) Do(context.Context, computer.Ref, computer.Action) (computer.Outcome, error) {
	return computer.Outcome{}, nil
}

func (d *cappedDriver) Stop(_ context.Context, r computer.Ref) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.held[r.Session] {
		return computer.ErrLost
	}
	delete(d.held, r.Session)
	return nil
}

func (d *cappedDriver) Put(context.Context, computer.Ref, computer.File) error { return nil }

// A computer worker at its session cap leaves starts to a worker with
// room; with every worker full a start is refused clearly once its wait
// ends; a worker whose session ended takes starts again.
func TestAFullComputerWorkerLeavesStartsToOneWithRoom(t *testing.T) {
	t.Parallel()
	rdb := redistest.New(t)
	prefix := redistest.Prefix(t)
	log := slog.New(slog.DiscardHandler)
	worker := func(id string) *cappedDriver {
		d := &cappedDriver{worker: id, max: 1, held: map[uuid.UUID]bool{}}
		w := redisx.NewPlaneWorker(rdb, redisx.PlaneWorkerOptions{ID: id, Pools: []string{computer.Pool}, Capacity: 2 * d.max, Prefix: prefix,
			PoolRoom: computer.StartRoom(d.Held, d.max)}, log)
		for kind, h := range computer.Handlers(d, nil, nil) {
			w.Handle(kind, h)
		}
		require.NoError(t, w.Start(t.Context()))
		t.Cleanup(w.Stop)
		return d
	}
	driver := computer.PlaneDriver{Plane: redisx.NewPlane(rdb, prefix, log), StartWait: time.Second}
	tenant := uuid.New()
	start := func() (computer.Ref, error) {
		spec := computer.Spec{Tenant: tenant, Agent: uuid.New(), Session: uuid.New(), Width: 800, Height: 600}
		w, err := driver.Start(t.Context(), spec)
		return computer.Ref{Tenant: tenant, Session: spec.Session, Worker: w}, err
	}

	a := worker("a")
	first, err := start()
	require.NoError(t, err)
	require.Equal(t, "a", first.Worker)
	b := worker("b")
	for range 2 { // a is full: the start goes to b, never refused by a
		r, err := start()
		require.NoError(t, err)
		require.Equal(t, "b", r.Worker)
		require.NoError(t, driver.Stop(t.Context(), r))
	}
	second, err := start()
	require.NoError(t, err)
	require.Equal(t, "b", second.Worker)

	// Both full: refused as busy, once the start's wait ends.
	at := time.Now()
	_, err = start()
	require.Equal(t, fault.Unavailable, fault.CodeOf(err))
	require.Contains(t, fault.Message(err), "all computer workers are busy")
	require.Less(t, time.Since(at), 10*time.Second, "the refusal comes when the wait ends")

	// a's session ends: a takes starts again.
	require.NoError(t, driver.Stop(t.Context(), first))
	r, err := start()
	require.NoError(t, err)
	require.Equal(t, "a", r.Worker)
	require.Zero(t, a.refused, "no start reached a full worker")
	require.Zero(t, b.refused, "no start reached a full worker")
}
