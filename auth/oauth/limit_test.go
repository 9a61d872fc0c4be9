package oauth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type fakeShared struct {
	n   map[string]int
	err error
}

func (f *fakeShared) Allow(_ context.Context, key string, n int, _ time.Duration) (bool, error) {
	if f.err != nil {
		return false, f.err
	}
	f.n[key]++
	return f.n[key] <= n, nil
}

// TestLimiterFallsBackToLocal shows the shared count is used when it
// answers, and a local count takes over (never no limit) when it does not.
func TestLimiterFallsBackToLocal(t *testing.T) {
	ctx := context.Background()
	shared := &fakeShared{n: map[string]int{}}
	l := newLimiter("login", Limit{N: 2, Per: time.Minute}, shared)
	require.True(t, l.allow(ctx, "t1|a"))
	require.True(t, l.allow(ctx, "t1|a"))
	require.False(t, l.allow(ctx, "t1|a"))
	require.Equal(t, 3, shared.n["login|t1|a"])
	require.Empty(t, l.win, "nothing counted locally while the shared limiter answers")

	shared.err = errors.New("redis down")
	require.True(t, l.allow(ctx, "t1|a"))
	require.True(t, l.allow(ctx, "t1|a"))
	require.False(t, l.allow(ctx, "t1|a"), "the local limit holds while Redis is down")
	require.True(t, l.allow(ctx, "t2|a"), "per key")
}
