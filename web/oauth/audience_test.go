package oauth_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAccessTokenIsNotAnAdminCredential shows an OAuth access token, whose
// audience is the tenant's MCP endpoint, is refused by the admin API, and
// that the admin scopes cannot be granted to an OAuth client at all.
func TestAccessTokenIsNotAnAdminCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	tr := e.grant(e.browser(), "acme", clientID, redirect, "tools:read admin:read", "alice@acme.test")
	require.Equal(t, "tools:read", tr.Scope, "an admin scope was granted to an OAuth client")

	status, _, _ := e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusOK, status, "the token works at its own resource")

	req, err := http.NewRequest(http.MethodGet, e.base+"/api/v1/t/acme/whoami", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tr.AccessToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "an MCP-audience token was accepted by the admin API: %s", body)
}
