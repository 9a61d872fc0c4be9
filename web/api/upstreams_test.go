package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/upstream"
	"github.com/visorhq/visor/web/api"
)

// TestMCPServersThroughTheAPI: an operator adds, reads, lists, changes,
// refreshes and removes an upstream server and sets and removes its
// secret through the admin API. The secret is named, never returned, and
// masked in its audit row; a URL the outbound guard refuses is a 400; a
// read-only key is refused every change (audited); another tenant's key
// finds nothing.
func TestMCPServersThroughTheAPI(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	spec, err := secrets.NewKey("k")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(spec)
	require.NoError(t, err)
	dev := []string{"127.0.0.1"}
	guard := egress.New(egress.Config{AllowPrivateHosts: dev, Timeout: 5 * time.Second})
	svc := upstreams.NewService(upstreams.Config{Store: postgres.NewUpstreamStore(st.db), Keys: keys,
		CheckURL:   func(raw string) (string, error) { return egress.CheckURL(raw, dev) },
		Connectors: map[upstreams.Transport]upstreams.Connector{upstreams.StreamableHTTP: upstream.NewRemote(guard, "test", nil)}})
	t.Cleanup(svc.Stop)
	trail := &audit.Memory{}
	f := st.serve(api.Deps{Audit: trail}, api.NewUpstreams(svc)).withGlobex()
	op, other := f.opKey, f.otherKey
	reader := f.key(f.tenant, "reader", identity.ScopeAdminRead)
	base := "/api/v1/tenants/acme/mcp-servers"

	code, body := f.do("POST", base, op, `{"name":"meta","url":"https://169.254.169.254/mcp"}`, nil)
	require.Equal(t, 400, code, "a URL the outbound guard refuses: %s", body)
	code, body = f.do("POST", base, reader, `{"name":"down","url":"http://127.0.0.1:1/mcp"}`, nil)
	require.Equal(t, 403, code, body)
	var s upstreams.Server
	code, body = f.do("POST", base, op, `{"name":"down","url":"http://127.0.0.1:1/mcp","timeout_ms":2000}`, &s)
	require.Equal(t, 201, code, body)
	require.Contains(t, s.LastError, "cannot connect to upstream server down", "saved with why it cannot be listed")

	const value = "Bearer s3cret-api-token"
	code, body = f.do("PUT", base+"/down/secrets", reader, `{"kind":"header","name":"Authorization","secret_value":"`+value+`"}`, nil)
	require.Equal(t, 403, code, body)
	code, body = f.do("PUT", base+"/down/secrets", op, `{"kind":"header","name":"Authorization","secret_value":"`+value+`"}`, &s)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "s3cret-api-token")
	require.Equal(t, []upstreams.SecretName{{Kind: upstreams.SecretHeader, Name: "Authorization", Set: true}}, s.Secrets)
	code, body = f.do("PUT", base+"/down/secrets", op, `{"kind":"header","name":"Mcp-Session-Id","secret_value":"x"}`, nil)
	require.Equal(t, 400, code, "a header the transport sets: %s", body)

	var list api.UpstreamList
	code, body = f.do("GET", base, reader, "", &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Servers, 1)
	require.NotContains(t, body, "s3cret-api-token")
	code, body = f.do("GET", base+"/down", reader, "", &s)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "s3cret-api-token")

	code, body = f.do("PATCH", base+"/down", op, `{"timeout_ms":5000,"description":"staging"}`, &s)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"timeout_ms":5000`)
	require.Equal(t, "staging", s.Description)
	require.Equal(t, "http://127.0.0.1:1/mcp", s.URL, "absent fields stay")
	code, body = f.do("PATCH", base+"/down", op, `{"name":"renamed"}`, nil)
	require.Equal(t, 400, code, "a server is not renamed: %s", body)
	code, body = f.do("POST", base+"/down/refresh", op, "", nil)
	require.Equal(t, 503, code, "the server is still unreachable: %s", body)
	require.Contains(t, body, "listing the tools of down failed")

	code, _ = f.do("GET", "/api/v1/tenants/globex/mcp-servers", other, "", &list)
	require.Equal(t, 200, code)
	require.Empty(t, list.Servers, "globex sees none of acme's servers")
	code, _ = f.do("DELETE", "/api/v1/tenants/globex/mcp-servers/down", other, "", nil)
	require.Equal(t, 404, code, "globex removes acme's server")
	code, _ = f.do("GET", base+"/down", other, "", nil)
	require.Contains(t, []int{401, 403, 404}, code, "globex's key on acme's path")

	code, body = f.do("DELETE", base+"/down/secrets/header/Authorization", op, "", &s)
	require.Equal(t, 200, code, body)
	require.Empty(t, s.Secrets)
	code, body = f.do("DELETE", base+"/down", reader, "", nil)
	require.Equal(t, 403, code, body)
	code, body = f.do("DELETE", base+"/down", op, "", nil)
	require.Equal(t, 200, code, body)
	code, _ = f.do("GET", base+"/down", op, "", nil)
	require.Equal(t, 404, code)

	outcomes := map[string][]string{}
	for _, r := range trail.Entries() {
		require.NotContains(t, r.Change+r.Message, "s3cret-api-token", "%s's audit row masks the secret", r.Action)
		if strings.HasSuffix(r.Action, "MCPServer") || strings.HasSuffix(r.Action, "MCPServerSecret") {
			outcomes[r.Action] = append(outcomes[r.Action], r.Outcome)
		}
	}
	require.Contains(t, outcomes["createMCPServer"], audit.OutcomeRefused)
	require.Contains(t, outcomes["createMCPServer"], audit.OutcomeRejected)
	require.Contains(t, outcomes["createMCPServer"], audit.OutcomeOK)
	require.ElementsMatch(t, []string{audit.OutcomeRefused, audit.OutcomeOK, audit.OutcomeRejected}, outcomes["setMCPServerSecret"])
	require.Contains(t, outcomes["deleteMCPServer"], audit.OutcomeRefused)
	require.Contains(t, outcomes["deleteMCPServer"], audit.OutcomeOK)
}
