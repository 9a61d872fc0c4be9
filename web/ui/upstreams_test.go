package ui_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	authoauth "github.com/visorhq/visor/auth/oauth"
)

// TestUpstreamClientDocument: each tenant serves Visor's Client ID Metadata
// Document, with no session: a public client whose client id is the
// document's own URL and whose one redirect URI is the tenant's dashboard
// callback. An authorization server (Visor's own included) accepts it.
func TestUpstreamClientDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.browser().get("/t/acme/upstream-oauth/client")
	require.Equal(t, http.StatusOK, p.status, p.body)
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.body), &doc))
	require.Equal(t, e.base+"/t/acme/upstream-oauth/client", doc.ClientID)
	require.Equal(t, []string{e.base + "/t/acme/dashboard/mcp-servers/callback"}, doc.RedirectURIs)
	require.Equal(t, "none", doc.AuthMethod)
	c, err := authoauth.ParseClientMetadataDocument(doc.ClientID, []byte(p.body))
	require.NoError(t, err)
	require.Equal(t, doc.RedirectURIs, c.RedirectURIs)

	other := e.browser().get("/t/globex/upstream-oauth/client")
	require.Contains(t, other.body, "/t/globex/dashboard/mcp-servers/callback", "each tenant its own")
}
