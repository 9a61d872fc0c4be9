package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/sandbox"
)

type ticket struct {
	release func()
	waited  time.Duration
	err     error
}

// acquire asks for a slot in the background and waits until the request is
// either admitted or queued as the n-th waiter.
func acquire(t *testing.T, ctx context.Context, g *sandbox.Gate, tenant, employee uuid.UUID, queued int) <-chan ticket {
	t.Helper()
	ch := make(chan ticket, 1)
	before := g.Queued()
	go func() {
		r, w, err := g.Acquire(ctx, tenant, employee)
		ch <- ticket{r, w, err}
	}()
	if queued == 0 {
		return ch
	}
	require.Eventually(t, func() bool { return g.Queued() == before+1 }, 5*time.Second, time.Millisecond)
	return ch
}

func admitted(t *testing.T, ch <-chan ticket) ticket {
	t.Helper()
	select {
	case tk := <-ch:
		require.NoError(t, tk.err)
		return tk
	case <-time.After(5 * time.Second):
		t.Fatal("not admitted")
		return ticket{}
	}
}

func waiting(t *testing.T, ch <-chan ticket) {
	t.Helper()
	select {
	case tk := <-ch:
		t.Fatalf("admitted early: %+v", tk)
	default:
	}
}

func TestOneTenantsFloodCannotStarveAnother(t *testing.T) {
	t.Parallel()
	g := sandbox.NewGate(sandbox.Caps{Worker: 2, Tenant: 2, Employee: 10})
	ctx := context.Background()
	a, b, emp := uuid.New(), uuid.New(), uuid.New()
	first := admitted(t, acquire(t, ctx, g, a, emp, 0))
	admitted(t, acquire(t, ctx, g, a, emp, 0))
	var flood []<-chan ticket
	for range 5 {
		flood = append(flood, acquire(t, ctx, g, a, emp, 1))
	}
	other := acquire(t, ctx, g, b, emp, 1)
	waiting(t, other)

	first.release()
	tk := admitted(t, other) // B goes before A's older waiters
	require.Positive(t, tk.waited)
	for _, f := range flood {
		waiting(t, f)
	}
	require.Equal(t, 5, g.Queued())
	tk.release()
	admitted(t, flood[0]) // then A's oldest
}

func TestAnEmployeeWaitsBehindItsOwnCap(t *testing.T) {
	t.Parallel()
	g := sandbox.NewGate(sandbox.Caps{Worker: 4, Tenant: 4, Employee: 1})
	ctx := context.Background()
	tenant, ada, bob := uuid.New(), uuid.New(), uuid.New()
	one := admitted(t, acquire(t, ctx, g, tenant, ada, 0))
	two := acquire(t, ctx, g, tenant, ada, 1)
	admitted(t, acquire(t, ctx, g, tenant, bob, 0)) // another employee is not held up
	waiting(t, two)
	one.release()
	one.release() // a second call changes nothing
	admitted(t, two)
}

func TestAGiveUpLeavesTheQueue(t *testing.T) {
	t.Parallel()
	g := sandbox.NewGate(sandbox.Caps{Worker: 1, Tenant: 1, Employee: 1})
	tenant, emp := uuid.New(), uuid.New()
	held := admitted(t, acquire(t, context.Background(), g, tenant, emp, 0))
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := acquire(t, ctx, g, tenant, emp, 1)
	cancel()
	require.ErrorIs(t, (<-gaveUp).err, context.Canceled)
	require.Zero(t, g.Queued())
	next := acquire(t, context.Background(), g, tenant, emp, 1)
	held.release()
	admitted(t, next)
}
