package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// expectClosed waits for the server to end l, and checks nothing reached
// the revoked caller on it first.
func expectClosed(t testing.TB, l *listener, within time.Duration, what string) {
	t.Helper()
	select {
	case <-l.Done:
	case <-time.After(within):
		t.Fatalf("%s: the stream is still open %s after its credential was revoked", what, within)
	}
	select {
	case m := <-l.Changed:
		t.Fatalf("%s: a revoked caller received %q", what, m.Method)
	default:
	}
}

// expectOpen checks that l hears nothing and is not ended for a while.
func expectOpen(t testing.TB, l *listener, wait time.Duration, what string) {
	t.Helper()
	expectQuiet(t, l, wait, what)
	select {
	case <-l.Done:
		t.Fatalf("%s: the stream was closed", what)
	default:
	}
}

// mcpStatus sends a tools/list with token (2026-07-28, or on a legacy
// session when session is set) and returns the HTTP status.
func mcpStatus(t testing.TB, r *replica, token, session string) int {
	t.Helper()
	version, params := modernVersion, map[string]any{"_meta": modernMeta()}
	if session != "" {
		version, params = legacyVersion, map[string]any{}
	}
	resp := mcpSend(t, r, token, version, session, map[string]any{"id": 77, "method": "tools/list", "params": params})
	resp.Body.Close()
	return resp.StatusCode
}

// TestRevokedKeysAndTrashedAgentsLoseTheirStreams: revoking an agent key
// through replica A closes that key's streams on replica B (a legacy GET
// stream and a 2026-07-28 listen stream) before they hear anything, and
// the legacy session stops working; another key of the same agent, another
// agent and another tenant keep their streams and hear nothing. Trashing
// the agent then closes the streams of its remaining key.
func TestRevokedKeysAndTrashedAgentsLoseTheirStreams(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	// A long reconcile and sweep: closing here must come from the events.
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m", "VISOR_LIVE_CREDENTIAL_CHECK_EVERY=1h")
	ada2Key := w.agentKey(t, w.acme, w.ada)

	adaSession := legacySession(t, b, w.adaKey)
	adaLegacy := listenLegacy(t, b, w.adaKey)
	adaModern := listenModern(t, b, w.adaKey)
	ada2 := listenModern(t, b, ada2Key)
	bob := listenModern(t, b, w.bobKey)
	gil := listenLegacy(t, b, w.gilKey)

	id, _, ok := identity.ParseKeyToken(w.adaKey)
	require.True(t, ok)
	w.api(t, a, http.MethodDelete, "/tenants/acme/keys/"+id.String(), nil, nil)
	expectClosed(t, adaLegacy, 5*time.Second, "ada's revoked key, legacy GET stream on B")
	expectClosed(t, adaModern, 5*time.Second, "ada's revoked key, listen stream on B")
	require.Equal(t, http.StatusUnauthorized, mcpStatus(t, b, w.adaKey, adaSession), "the legacy session's next request with the revoked key")
	require.Equal(t, http.StatusUnauthorized, mcpStatus(t, b, w.adaKey, ""))
	expectOpen(t, ada2, 500*time.Millisecond, "ada's other key")
	expectOpen(t, bob, 10*time.Millisecond, "bob")
	expectOpen(t, gil, 10*time.Millisecond, "another tenant")
	require.Equal(t, http.StatusOK, mcpStatus(t, b, ada2Key, ""), "ada's other key still works")

	w.api(t, a, http.MethodPost, "/tenants/acme/agents/"+w.ada.ID.String()+"/trash", nil, nil)
	expectClosed(t, ada2, 5*time.Second, "the trashed agent's other key")
	require.Equal(t, http.StatusUnauthorized, mcpStatus(t, b, ada2Key, ""))
	expectOpen(t, bob, 500*time.Millisecond, "bob, after ada was trashed")
	expectOpen(t, gil, 10*time.Millisecond, "another tenant, after ada was trashed")
	m := metrics(t, b)
	require.EqualValues(t, 3, m["visor_live_revoked_streams_total"])
	require.EqualValues(t, 2, m["visor_live_streams"], "bob's and gil's streams remain")
}

// TestLostRevocationIsRepairedByReconciliation: a key revoked with no event
// published (the bus lost it) still ends its streams: the reconciler sees
// the tenant's policy version move and re-checks the credentials.
func TestLostRevocationIsRepairedByReconciliation(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w, _, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=300ms", "VISOR_LIVE_CREDENTIAL_CHECK_EVERY=1h")
	ada := listenModern(t, b, w.adaKey)
	bob := listenModern(t, b, w.bobKey)
	// Sleep, not a signal: the replica's reconciler, in another process,
	// must have learned the versions (every 300ms) before the revocation,
	// so that what repairs it is the version moving; nothing reports that.
	time.Sleep(time.Second)
	id, _, _ := identity.ParseKeyToken(w.adaKey)
	// w.ids publishes nothing: only Postgres knows.
	_, err := w.ids.RevokeKey(context.Background(), w.acme.ID, id)
	require.NoError(t, err)
	expectClosed(t, ada, 5*time.Second, "ada's key revoked without an event")
	expectOpen(t, bob, 500*time.Millisecond, "bob")
}

// TestRevokedOAuthTokensAndRoundTokensLoseTheirStreams: listen streams
// opened with an OAuth access token end when the token is revoked (RFC
// 7009) or its client is deleted, and one opened with a round token ends
// when the round token is revoked, all through the revocation's event (the
// credential sweep is an hour away); an agent key's stream stays open.
func TestRevokedOAuthTokensAndRoundTokensLoseTheirStreams(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w := newWorld(t)
	_, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m", "VISOR_LIVE_CREDENTIAL_CHECK_EVERY=1h")
	base := r.base + "/t/acme"
	redirect := "http://127.0.0.1:7777/callback"
	cid := oauthRegister(t, base+"/oauth/register", redirect)
	tok := oauthAuthorize(t, r, base+"/oauth/authorize", base+"/oauth/token", cid, redirect, base+"/mcp", "E2E")
	// A second client: consent to the first is remembered, so its
	// authorize would skip the page oauthAuthorize expects.
	cid2 := oauthRegister(t, base+"/oauth/register", redirect)
	tok2 := oauthAuthorize(t, r, base+"/oauth/authorize", base+"/oauth/token", cid2, redirect, base+"/mcp", "E2E")
	var rt struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	w.api(t, r, http.MethodPost, "/tenants/acme/agents/"+w.ada.ID.String()+"/round-tokens",
		map[string]any{"task_id": pgtest.Task(t, w.db, w.acme.ID)}, &rt)
	l := listenModern(t, r, tok.AccessToken)
	l2 := listenModern(t, r, tok2.AccessToken)
	round := listenModern(t, r, rt.Token)
	bob := listenModern(t, r, w.bobKey)

	res, err := http.PostForm(base+"/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {cid}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	expectClosed(t, l, 5*time.Second, "the revoked access token's listen stream")
	expectOpen(t, l2, 10*time.Millisecond, "another grant's stream")
	expectOpen(t, round, 10*time.Millisecond, "the round token's stream")

	w.api(t, r, http.MethodDelete, "/tenants/acme/oauth/clients/"+url.PathEscape(cid2), nil, nil)
	expectClosed(t, l2, 5*time.Second, "a deleted client's stream")
	expectOpen(t, round, 10*time.Millisecond, "the round token's stream")

	w.api(t, r, http.MethodDelete, "/tenants/acme/round-tokens/"+rt.ID, nil, nil)
	expectClosed(t, round, 5*time.Second, "the revoked round token's stream")
	require.Equal(t, http.StatusUnauthorized, mcpStatus(t, r, rt.Token, ""))
	expectOpen(t, bob, 300*time.Millisecond, "an agent key's stream")
}

// TestCredentialSweepClosesWhatNoEventAnnounced: an OAuth grant
// deactivated behind the hub's back (no event, no policy version) ends its
// stream at the next credential sweep.
func TestCredentialSweepClosesWhatNoEventAnnounced(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w := newWorld(t)
	_, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, srv.URL(), "VISOR_LIVE_CREDENTIAL_CHECK_EVERY=1s")
	base := r.base + "/t/acme"
	redirect := "http://127.0.0.1:7777/callback"
	cid := oauthRegister(t, base+"/oauth/register", redirect)
	tok := oauthAuthorize(t, r, base+"/oauth/authorize", base+"/oauth/token", cid, redirect, base+"/mcp", "E2E")
	l := listenModern(t, r, tok.AccessToken)
	bob := listenModern(t, r, w.bobKey)
	_, err = w.db.Pool.Exec(context.Background(), `UPDATE oauth_tokens SET active = false WHERE tenant_id = $1`, w.acme.ID)
	require.NoError(t, err)
	expectClosed(t, l, 5*time.Second, "a grant deactivated without an event")
	expectOpen(t, bob, 10*time.Millisecond, "an agent key's stream")
}

// oauthRegister registers a public client by RFC 7591 and returns its id.
func oauthRegister(t *testing.T, endpoint, redirect string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": "E2E", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	res, err := http.Post(endpoint, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&reg))
	return reg.ClientID
}

// TestDemotedMembersOAuthStreamHearsItsListShrink: a member's role bounds
// their OAuth clients' scopes, so demoting the member (admin API, through
// the bus) tells their client's open stream that its list changed, once,
// and the list is then smaller (the tools:admin tools are gone); a role change that keeps the grantable
// scopes tells no one, and an agent's stream hears nothing either way.
func TestDemotedMembersOAuthStreamHearsItsListShrink(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w := newWorld(t)
	m, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	_, err = w.ids.CreateMember(context.Background(), w.acme.ID, "boss@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m", "VISOR_LIVE_CREDENTIAL_CHECK_EVERY=1h")
	base := r.base + "/t/acme"
	redirect := "http://127.0.0.1:7777/callback"
	cid := oauthRegister(t, base+"/oauth/register", redirect)
	tok := oauthAuthorizeScope(t, r, base+"/oauth/authorize", base+"/oauth/token", cid, redirect, base+"/mcp", "E2E", "tools:read tools:write tools:admin")
	before := toolNames(t, r, tok.AccessToken)
	l := listenModern(t, r, tok.AccessToken)
	bob := listenModern(t, r, w.bobKey)

	w.api(t, r, http.MethodPatch, "/tenants/acme/members/"+m.ID.String(), map[string]any{"role": "admin"}, nil)
	expectOpen(t, l, 500*time.Millisecond, "owner to admin")

	w.api(t, r, http.MethodPatch, "/tenants/acme/members/"+m.ID.String(), map[string]any{"role": "viewer"}, nil)
	expectChange(t, l, 5*time.Second, "the demoted member's client")
	expectOpen(t, l, 300*time.Millisecond, "the demoted member's client, after its one notification")
	after := toolNames(t, r, tok.AccessToken)
	require.Less(t, len(after), len(before))
	require.Subset(t, before, after)
	expectOpen(t, bob, 10*time.Millisecond, "an agent key's stream")
}
