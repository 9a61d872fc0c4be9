package redisx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

func TestRateLimiterIsShared(t *testing.T) {
	t.Parallel()
	c := redistest.New(t)
	prefix := redistest.Prefix(t)
	at := time.Now() // pinned: the counts must fall in one window
	clock := func() time.Time { return at }
	a := redisx.NewRateLimiter(c.Client, prefix).WithClock(clock) // two replicas
	b := redisx.NewRateLimiter(c.Client, prefix).WithClock(clock)
	ctx := context.Background()
	for i := range 4 {
		l := a
		if i%2 == 1 {
			l = b
		}
		ok, err := l.Allow(ctx, "tenant-1|alice@acme.test", 4, time.Minute)
		require.NoError(t, err)
		require.True(t, ok, "event %d", i)
	}
	ok, err := b.Allow(ctx, "tenant-1|alice@acme.test", 4, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "the fifth event, counted across both replicas")
	ok, err = a.Allow(ctx, "tenant-2|alice@acme.test", 4, time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "another key has its own count")
}

// TestRateLimiterRefund shows a refunded event no longer counts, on any
// replica.
func TestRateLimiterRefund(t *testing.T) {
	t.Parallel()
	c := redistest.New(t)
	prefix := redistest.Prefix(t)
	at := time.Now() // pinned: the counts must fall in one window
	clock := func() time.Time { return at }
	a := redisx.NewRateLimiter(c.Client, prefix).WithClock(clock)
	b := redisx.NewRateLimiter(c.Client, prefix).WithClock(clock)
	ctx := context.Background()
	for i := range 10 {
		undo, ok, err := a.Reserve(ctx, "t|bob", 2, time.Minute)
		require.NoError(t, err)
		require.True(t, ok, "refunded event %d", i)
		require.NoError(t, undo(ctx))
	}
	for range 2 {
		ok, err := b.Allow(ctx, "t|bob", 2, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err := a.Allow(ctx, "t|bob", 2, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "the third kept event is over the limit")
}
