package ui_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/web/ui"
)

// TestPostLimitHoldsWithoutRedis: when Redis does not answer, each replica
// counts in memory: the limit weakens to one budget per replica but is
// never lifted.
func TestPostLimitHoldsWithoutRedis(t *testing.T) {
	t.Parallel()
	gone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = gone.Close() })
	e := newEnv(t, func(d *ui.Deps) { d.Limiter, d.PostLimit = redisx.NewRateLimiter(gone, "visor:test:"), 2 })
	a := e.agent("worker")
	b := e.browser()
	e.signIn(b, identity.RoleOperator)
	path := "/t/acme/dashboard/agents/" + a.ID.String()
	require.Equal(t, http.StatusSeeOther, b.submit(path, path+"/trash", nil).status)
	require.Equal(t, http.StatusSeeOther, b.submit(path, path+"/restore", nil).status)
	require.Equal(t, http.StatusTooManyRequests, b.submit(path, path+"/trash", nil).status)
}
