package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/server"
)

// replica is one `visor serve` built as serve builds it, on a test server.
type replica struct {
	a    *app
	base string
}

// startReplicas starts n replicas on one database and the test Redis, with
// the environment extra adds.
func startReplicas(t *testing.T, n int, dbURL string, extra ...string) []replica {
	t.Helper()
	cfg, err := LoadConfig(testEnvGetenv(testEnv(t, dbURL, extra...)))
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	var rs []replica
	// One pinned clock for every replica's rate limits: a burst that
	// straddled the edge of a window would start a fresh budget.
	now := time.Now()
	for range n {
		a, err := openApp(context.Background(), cfg, log, nil, appNeeds{redis: true, schemaCheck: true})
		require.NoError(t, err)
		t.Cleanup(a.Close)
		a.limitClock = func() time.Time { return now }
		s := server.New(server.Options{Logger: log, ErrorHandler: a.errorHandler(), TrustedProxies: cfg.TrustedProxies})
		ts := httptest.NewServer(s.Echo())
		t.Cleanup(ts.Close)
		require.NoError(t, a.edges(context.Background(), s, ts.URL))
		rs = append(rs, replica{a: a, base: ts.URL})
	}
	return rs
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// signIn posts the sign-in form of tenant slug on base and returns the
// status.
func signIn(t *testing.T, base, slug, email, password string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(base + "/t/" + slug + "/login")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfField.FindStringSubmatch(string(body))
	require.NotNil(t, m, "no sign-in form: %s", body)
	res, err = c.PostForm(base+"/t/"+slug+"/login", url.Values{"csrf_token": {m[1]}, "email": {email}, "password": {password}})
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// TestReplicasShareTheSignInBudget: two replicas on one Redis together allow
// exactly the failed sign-ins one would (10 per 5 minutes per address and
// email), not twice as many.
func TestReplicasShareTheSignInBudget(t *testing.T) {
	t.Parallel()
	needRedis(t)
	rs := startReplicas(t, 2, pgtest.NewURL(t))
	ctx := context.Background()
	tn, err := rs[0].a.ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	_, err = rs[0].a.ids.CreateMember(ctx, tn.ID, "alice@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)

	for i := range 10 {
		status := signIn(t, rs[i%2].base, "acme", "alice@acme.test", "a wrong guess")
		require.Equal(t, http.StatusUnauthorized, status, "failure %d of the budget of 10", i+1)
	}
	for i, r := range rs {
		status := signIn(t, r.base, "acme", "alice@acme.test", "another guess")
		require.Equal(t, http.StatusTooManyRequests, status, "replica %d: the budget is spent on both replicas together", i)
	}
}

// register sends a dynamic client registration to base as if from the
// address from (X-Forwarded-For, believed only from a trusted proxy).
func register(t *testing.T, base, slug, from string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/t/"+slug+"/oauth/register",
		strings.NewReader(`{"redirect_uris":["http://127.0.0.1:3000/cb"],"token_endpoint_auth_method":"none"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", from)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// TestRegistrationFloodLocksOutOnlyTheFlooder: an anonymous party flooding
// dynamic registration from one address, across replicas, is stopped at
// 20 an hour, while a client registering from another address in the same
// tenant still succeeds. The address comes from X-Forwarded-For only when
// the request arrives through a trusted proxy: without one, a flooder
// cannot dodge the limit by inventing addresses.
func TestRegistrationFloodLocksOutOnlyTheFlooder(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := pgtest.NewURL(t)
	rs := startReplicas(t, 2, url, "VISOR_TRUSTED_PROXIES", "127.0.0.1/32")
	_, err := rs[0].a.ids.CreateTenant(context.Background(), "acme", "Acme")
	require.NoError(t, err)

	for i := range 20 {
		require.Equal(t, http.StatusCreated, register(t, rs[i%2].base, "acme", "198.51.100.7"), "registration %d", i+1)
	}
	for _, r := range rs {
		require.Equal(t, http.StatusTooManyRequests, register(t, r.base, "acme", "198.51.100.7"), "the flooder's 21st, on either replica")
	}
	require.Equal(t, http.StatusCreated, register(t, rs[1].base, "acme", "203.0.113.9"), "a client at another address in the same tenant")
	require.Equal(t, http.StatusCreated, register(t, rs[0].base, "acme", "2001:db8:1:2::1"))
	require.Equal(t, http.StatusCreated, register(t, rs[0].base, "acme", "2001:db8:9:9::1"))

	direct := startReplicas(t, 1, url)[0] // no trusted proxy: the peer address counts
	for i := range 20 {
		require.Equal(t, http.StatusCreated, register(t, direct.base, "acme", fmt.Sprintf("192.0.2.%d", i)), "registration %d", i+1)
	}
	require.Equal(t, http.StatusTooManyRequests, register(t, direct.base, "acme", "192.0.2.200"),
		"an invented X-Forwarded-For from an untrusted peer is ignored")
}
