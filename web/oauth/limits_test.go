package oauth_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
	"github.com/visorhq/visor/web/oauth"
)

// TestSuccessfulSignInsDoNotCountAsFailures: the sign-in limit counts failed
// attempts only (in Redis, as in production), so a member who signs in
// often never locks themself out, while guesses still run out.
func TestSuccessfulSignInsDoNotCountAsFailures(t *testing.T) {
	t.Parallel()
	rl := redisx.NewRateLimiter(redistest.New(t).Client, redistest.Prefix(t))
	e := newEnv(t, func(c *oauth.Config) { c.LoginLimit = oauth.Limit{N: 3, Per: time.Hour}; c.Limiter = rl })
	for range 6 {
		b := e.browser()
		e.login(b, "acme", b.get(e.base+"/t/acme/login"), "alice@acme.test")
	}
	b := e.browser()
	csrf := field(t, csrfRE, b.get(e.base+"/t/acme/login").body)
	wrong := url.Values{"csrf_token": {csrf}, "email": {"alice@acme.test"}, "password": {"not the password"}}
	for i := range 3 {
		res := b.post(e.base+"/t/acme/login", wrong, e.base)
		require.Equal(t, http.StatusUnauthorized, res.status, "failure %d is within the budget of 3, after 6 successes", i+1)
	}
	right := url.Values{"csrf_token": {csrf}, "email": {"alice@acme.test"}, "password": {password}}
	res := b.post(e.base+"/t/acme/login", right, e.base)
	require.Equal(t, http.StatusTooManyRequests, res.status, "after 3 failures even the right password waits")
}

// TestMetadataFetchFloodLocksOutOnlyTheFlooder: authorization requests
// naming new metadata documents from one address spend that address's
// fetch budget only; a client at another address in the same tenant still
// has its document fetched.
func TestMetadataFetchFloodLocksOutOnlyTheFlooder(t *testing.T) {
	t.Parallel()
	rl := redisx.NewRateLimiter(redistest.New(t).Client, redistest.Prefix(t))
	e := newEnv(t, func(c *oauth.Config) { c.FetchLimit = oauth.Limit{N: 2, Per: time.Hour}; c.Limiter = rl })
	redirect := "https://client.example/cb"
	_, challenge := pkce()
	b := e.browser()
	authorize := func(doc, from string) page {
		id := e.cimdClient(doc, redirect)
		req, err := http.NewRequest(http.MethodGet, e.authorizeURL(authz{tenant: "acme", clientID: id, redirect: redirect,
			state: "s", challenge: challenge, method: "S256"}), nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", from)
		return b.do(req)
	}
	for i := range 2 {
		p := authorize(fmt.Sprintf("/flood/%d.json", i), "198.51.100.7")
		require.Equal(t, http.StatusOK, p.status, "fetch %d: %s", i+1, p.body)
	}
	p := authorize("/flood/2.json", "198.51.100.7")
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "Too many client metadata documents fetched from your address")
	p = authorize("/real-client.json", "203.0.113.9")
	require.Equal(t, http.StatusOK, p.status, "a client at another address: %s", p.body)
}

// TestKnownBrowserSignsInWhileTheMemberIsUnderAttack: an outsider who
// spends a member's failure budget from elsewhere keeps out unknown
// browsers, but not a browser the member signed in with before.
func TestKnownBrowserSignsInWhileTheMemberIsUnderAttack(t *testing.T) {
	t.Parallel()
	rl := redisx.NewRateLimiter(redistest.New(t).Client, redistest.Prefix(t))
	e := newEnv(t, func(c *oauth.Config) { c.LoginLimit = oauth.Limit{N: 3, Per: time.Hour}; c.Limiter = rl })
	post := func(b *browser, from, email, pw string) int {
		p := b.get(e.base + "/t/acme/login")
		form := url.Values{"csrf_token": {field(t, csrfRE, p.body)}, "email": {email}, "password": {pw}}
		req, err := http.NewRequest(http.MethodPost, e.base+"/t/acme/login", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", from)
		return b.do(req).status
	}
	alice := e.browser()
	require.Equal(t, http.StatusSeeOther, post(alice, "198.51.100.1", "alice@acme.test", password))

	for i := range 4 { // the attacker changes address, so only the member's budget runs out
		want := http.StatusUnauthorized
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		require.Equal(t, want, post(e.browser(), fmt.Sprintf("203.0.113.%d", i), "alice@acme.test", "guess"), "guess %d", i+1)
	}
	require.Equal(t, http.StatusTooManyRequests, post(e.browser(), "198.51.100.1", "alice@acme.test", password),
		"an unknown browser still waits: the member's budget is spent")
	require.Equal(t, http.StatusSeeOther, post(alice, "198.51.100.1", "alice@acme.test", password),
		"the browser alice signed in with before is not locked out")

	// The known browser has a failure budget of its own.
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, post(alice, "198.51.100.1", "alice@acme.test", "typo"))
	}
	require.Equal(t, http.StatusTooManyRequests, post(alice, "198.51.100.2", "alice@acme.test", password))
}
