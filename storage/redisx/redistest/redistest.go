// Package redistest gives tests a Redis client on a database of their own.
//
// Set VISOR_TEST_REDIS_URL to point at a server (default: redis on
// 127.0.0.1:6379). When it cannot be reached the test is skipped with a loud
// reason, unless VISOR_TEST_REQUIRE_SERVICES=1 (set by CI), in which case it
// fails.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/storage/redisx"
)

// DefaultURL is used when VISOR_TEST_REDIS_URL is unset.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL returns the Redis URL tests use.
func URL() string {
	if u := os.Getenv("VISOR_TEST_REDIS_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// New returns a client on the test Redis, closed when the test ends. Tests
// share one Redis database, so keys and channels they use must carry
// Prefix(t) or another per-test value.
func New(t testing.TB) *redisx.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := redisx.Open(ctx, URL())
	if err != nil {
		pgtest.Unavailable(t, "Redis", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Prefix returns a random key prefix unique to this call, so parallel tests
// never see each other's keys.
func Prefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test:" + hex.EncodeToString(b[:]) + ":"
}
