package ui_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
	"github.com/visorhq/visor/web/ui"
)

// TestPostLimitIsSharedByReplicas: a member's form posts count in Redis,
// so two replicas together allow what one would.
func TestPostLimitIsSharedByReplicas(t *testing.T) {
	t.Parallel()
	rdb := redistest.New(t)
	// One pinned instant: the posts below take seconds on a busy machine
	// and must not straddle two of the limiter's one-minute windows.
	at := time.Now()
	limiter := redisx.NewRateLimiter(rdb.Client, redistest.Prefix(t)).WithClock(func() time.Time { return at })
	e := newEnv(t, func(d *ui.Deps) { d.Limiter, d.PostLimit = limiter, 4 })
	a := e.agent("worker")
	one, two := e.browser(), e.browser()
	e.signIn(one, identity.RoleOperator)
	two.c.Jar = one.c.Jar // the same member's browser, served by the other replica
	two.onReplica(e.replica())
	path := "/t/acme/dashboard/agents/" + a.ID.String()
	for i, step := range []struct {
		b  *browser
		to string
	}{{one, "/trash"}, {two, "/restore"}, {one, "/trash"}, {two, "/restore"}} {
		res := step.b.submit(path, path+step.to, nil)
		require.Equal(t, http.StatusSeeOther, res.status, "post %d: %s", i, res.body)
	}
	res := two.submit(path, path+"/trash", nil)
	require.Equal(t, http.StatusTooManyRequests, res.status, "the fifth post, on either replica, is over the budget")
	res = one.submit(path, path+"/trash", nil)
	require.Equal(t, http.StatusTooManyRequests, res.status)
	got, err := e.store.Agent(t.Context(), e.a.ID, a.ID)
	require.NoError(t, err)
	require.Equal(t, identity.AgentActive, got.Status, "a refused post changes nothing")
	// Another member has a budget of their own.
	other := e.browser()
	e.signIn(other, identity.RoleAdmin)
	require.Equal(t, http.StatusSeeOther, other.submit(path, path+"/trash", nil).status)
}
