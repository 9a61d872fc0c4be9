package redisx_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

func TestOpenPingsAndRoundTrips(t *testing.T) {
	t.Parallel()
	c := redistest.New(t)
	ctx := context.Background()
	key := redistest.Prefix(t) + "k"
	require.NoError(t, c.Set(ctx, key, "v", time.Minute).Err())
	got, err := c.Get(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, "v", got)
}

func TestOpenErrorsAreOneClearLine(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err := redisx.Open(ctx, "http://user:hunter2@localhost:6379")
	require.ErrorContains(t, err, "parse Redis URL")
	require.NotContains(t, err.Error(), "hunter2")

	// Port 1 on loopback refuses connections.
	_, err = redisx.Open(ctx, "redis://:hunter2@127.0.0.1:1/0")
	require.ErrorContains(t, err, "connect to Redis at 127.0.0.1:1")
	require.NotContains(t, err.Error(), "hunter2")
	require.NotContains(t, err.Error(), "\n")
}

func TestClientRecoversAfterConnectionsDrop(t *testing.T) {
	t.Parallel()
	c := redistest.New(t)
	ctx := context.Background()
	// Kill this client's connection from the server side; go-redis must
	// redial on the next command.
	id, err := c.ClientID(ctx).Result()
	require.NoError(t, err)
	admin := redistest.New(t)
	require.NoError(t, admin.ClientKillByFilter(ctx, "ID", itoa(id)).Err())
	require.Eventually(t, func() bool { return c.Ping(ctx) == nil }, 5*time.Second, 50*time.Millisecond)
}

func itoa(n int64) string {
	return strconv.FormatInt(n, 10)
}
