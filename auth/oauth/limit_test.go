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

func (f *fakeShared) Reserve(ctx context.Context, key string, n int, per time.Duration) (func(context.Context) error, bool, error) {
	ok, err := f.Allow(ctx, key, n, per)
	return func(context.Context) error { f.n[key]--; return nil }, ok, err
}

// TestLimiterFallsBackToLocal shows the shared count is used when it
// answers, and a local count takes over (never no limit) when it does not.
func TestLimiterFallsBackToLocal(t *testing.T) {
	ctx := context.Background()
	shared := &fakeShared{n: map[string]int{}}
	l := NewLimiter("login", Limit{N: 2, Per: time.Minute}, shared)
	require.True(t, l.Allow(ctx, "t1|a"))
	require.True(t, l.Allow(ctx, "t1|a"))
	require.False(t, l.Allow(ctx, "t1|a"))
	require.Equal(t, 3, shared.n["login|t1|a"])
	require.Empty(t, l.win, "nothing counted locally while the shared limiter answers")

	shared.err = errors.New("redis down")
	require.True(t, l.Allow(ctx, "t1|a"))
	require.True(t, l.Allow(ctx, "t1|a"))
	require.False(t, l.Allow(ctx, "t1|a"), "the local limit holds while Redis is down")
	require.True(t, l.Allow(ctx, "t2|a"), "per key")
}

// TestLimiterReserveUndo shows an undone event stops counting, whether the
// shared limiter or the local fallback counted it.
func TestLimiterReserveUndo(t *testing.T) {
	ctx := context.Background()
	for _, shared := range []*fakeShared{{n: map[string]int{}}, {n: map[string]int{}, err: errors.New("redis down")}} {
		l := NewLimiter("login", Limit{N: 1, Per: time.Minute}, shared)
		for range 5 {
			undo, ok := l.Reserve(ctx, "t1|a")
			require.True(t, ok)
			undo()
		}
		_, ok := l.Reserve(ctx, "t1|a")
		require.True(t, ok)
		_, ok = l.Reserve(ctx, "t1|a")
		require.False(t, ok, "the second kept event is over the limit")
	}
}

func TestSourceKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":             "203.0.113.7",
		"::ffff:203.0.113.7":      "203.0.113.7",
		"2001:db8:1:2:aaaa::1":    "2001:db8:1:2::/64",
		"2001:db8:1:2:bbbb::9999": "2001:db8:1:2::/64",
		"not an address":          "not an address",
	} {
		require.Equal(t, want, SourceKey(in), in)
	}
}
