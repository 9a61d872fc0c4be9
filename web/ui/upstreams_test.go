package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authoauth "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/upstream"
	"github.com/visorhq/visor/web/ui"
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

// TestMCPServersPageRefusals: on a server with one token for the tenant,
// a viewer sees no Connect button and is refused (403) when posting one;
// an owner's Connect to an unreachable server shows why; a callback with
// a state that was never issued is refused. Each refusal is audited as
// connectMCPServer. A secret set on the page is never shown and its audit
// row masks the value.
func TestMCPServersPageRefusals(t *testing.T) {
	t.Parallel()
	var svc *upstreams.Service
	e := newEnv(t, func(d *ui.Deps) { d.Upstreams = svc })
	entry, err := secrets.NewKey("ui")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(entry)
	require.NoError(t, err)
	dev := []string{"127.0.0.1"}
	guard := egress.New(egress.Config{AllowPrivateHosts: dev, Timeout: 5 * time.Second})
	check := func(raw string) (string, error) { return egress.CheckURL(raw, dev) }
	svc = upstreams.NewService(upstreams.Config{Store: postgres.NewUpstreamStore(e.db), Keys: keys, CheckURL: check,
		Connectors: map[upstreams.Transport]upstreams.Connector{upstreams.StreamableHTTP: upstream.NewRemote(guard, "test", nil)}})
	svc.SetOAuth(upstream.NewOAuth(guard, check))
	t.Cleanup(svc.Stop)
	rep := e.replica()
	ctx := context.Background()
	_, err = svc.Create(ctx, e.a.ID, upstreams.Input{Name: "github", Transport: upstreams.StreamableHTTP, URL: "http://127.0.0.1:1/mcp",
		Auth: upstreams.Auth{Kind: upstreams.AuthOAuth}}, "test")
	require.NoError(t, err)
	const page = "/t/acme/dashboard/mcp-servers"
	refusals := func() int {
		n := 0
		for _, r := range e.audit.Entries() {
			if r.Action == "connectMCPServer" && r.Outcome != audit.OutcomeOK {
				n++
			}
		}
		return n
	}

	viewer := e.browser()
	viewer.onReplica(rep)
	e.signIn(viewer, identity.RoleViewer)
	p := viewer.get(page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Not connected")
	require.NotContains(t, p.body, "/mcp-servers/github/connect", "a viewer cannot connect a tenant's token")
	res := viewer.submit(page, page+"/github/connect", nil)
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	require.Equal(t, 1, refusals())

	owner := e.browser()
	owner.onReplica(rep)
	e.signIn(owner, identity.RoleOwner)
	p = owner.get(page)
	require.Contains(t, p.body, "/mcp-servers/github/connect")
	res = owner.submit(page, page+"/github/connect", nil)
	require.Equal(t, http.StatusServiceUnavailable, res.status, res.body)
	require.Contains(t, res.body, "OAuth metadata cannot be read")
	require.Equal(t, 2, refusals())

	res = owner.get(page + "/callback?state=never-issued&code=x")
	require.Equal(t, http.StatusBadRequest, res.status, res.body)
	require.Contains(t, res.body, "click Connect again")
	require.Equal(t, 3, refusals())

	// A secret set on the page is named, never shown, and its audit row
	// masks the value; a viewer's attempt is refused and audited.
	const value = "team-secret-value-77"
	form := url.Values{"kind": {"header"}, "name": {"X-Team"}, "secret_value": {value}}
	res = viewer.submit(page, page+"/github/secrets", form)
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	done := follow(t, owner, page, page+"/github/secrets", form)
	require.Equal(t, http.StatusOK, done.status, done.body)
	require.Contains(t, done.body, "X-Team")
	require.NotContains(t, done.body, value)
	var rows []string
	for _, r := range e.audit.Entries() {
		if r.Action == "setMCPServerSecret" {
			rows = append(rows, r.Outcome)
			require.NotContains(t, r.Change+r.Message, value, "the audit row masks the secret")
		}
	}
	require.ElementsMatch(t, []string{audit.OutcomeRefused, audit.OutcomeOK}, rows)
}
