package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// sharedRedis returns the URL of a private redis-server for this test.
func privateRedis(t testing.TB) *redistest.Server { return redistest.StartServer(t) }

// twoReplicas starts replicas A and B on one fresh database and one Redis.
func twoReplicas(t *testing.T, redisURL string, env ...string) (*world, *replica, *replica) {
	t.Helper()
	w := newWorld(t)
	tenantOfKey.Store(w.gilKey, "globex")
	a := startReplica(t, "A", w.dbURL, redisURL, env...)
	b := startReplica(t, "B", w.dbURL, redisURL, env...)
	return w, a, b
}

// TestTwoReplicasNotifyExactlyTheAffectedCaller: a
// change through replica A's admin API reaches ada's listeners on replica
// B (a legacy GET stream and a 2026-07-28 listen stream), nobody else's, a
// no-op edit sends nothing, and tools/list on either replica then returns
// the new set.
func TestTwoReplicasNotifyExactlyTheAffectedCaller(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	// A long reconcile period: delivery here must come from the bus.
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")

	before := toolNames(t, b, w.adaKey)
	require.Contains(t, before, "agent_status")
	// Replica A holds no stream of ada's, and has just answered ada's
	// tools/list (so it may hold ada's settings in a short cache).
	require.ElementsMatch(t, before, toolNames(t, a, w.adaKey))

	adaLegacy := listenLegacy(t, b, w.adaKey)
	adaModern := listenModern(t, b, w.adaKey)
	bob := listenModern(t, b, w.bobKey)
	gil := listenLegacy(t, b, w.gilKey)
	bobOnA := listenModern(t, a, w.bobKey)

	// The change, through replica A: ada may no longer see agent_status.
	w.setDenied(t, a, w.ada, "agent_status")
	expectChange(t, adaLegacy, 5*time.Second, "ada's legacy GET stream on B")
	m := expectChange(t, adaModern, 5*time.Second, "ada's listen stream on B")
	require.Contains(t, string(m.Params), "listen-1", "a listen-stream notification carries its subscriptionId")

	want := slices.DeleteFunc(slices.Clone(before), func(s string) bool { return s == "agent_status" })
	for _, r := range []*replica{b, a} {
		require.ElementsMatch(t, want, toolNames(t, r, w.adaKey), "replica %s lists the new set right after the notification", r.name)
	}

	// A no-op edit (the same settings again) sends nothing to anyone.
	w.setDenied(t, a, w.ada, "agent_status")
	// An edit of a tool ada cannot see anyway changes nothing visible either.
	w.setDenied(t, a, w.ada, "agent_status", "no_such_tool")
	expectQuiet(t, adaLegacy, 700*time.Millisecond, "no-op edit (legacy)")
	expectQuiet(t, adaModern, 10*time.Millisecond, "no-op edit (listen)")
	expectQuiet(t, bob, 10*time.Millisecond, "bob is not affected")
	expectQuiet(t, gil, 10*time.Millisecond, "another tenant's caller")
	expectQuiet(t, bobOnA, 10*time.Millisecond, "bob on replica A")

	// Back again: ada is told on both streams.
	w.setDenied(t, a, w.ada)
	expectChange(t, adaLegacy, 5*time.Second, "undo (legacy)")
	expectChange(t, adaModern, 5*time.Second, "undo (listen)")
	require.ElementsMatch(t, before, toolNames(t, b, w.adaKey))
	expectQuiet(t, bob, 300*time.Millisecond, "bob is still not affected")
	expectQuiet(t, gil, 10*time.Millisecond, "another tenant is still not affected")
}

// TestListenDeliversOnlyWhatTheClientOptedInto, for
// 2026-07-28: a listen stream that did not opt into toolsListChanged hears
// nothing when the caller's tools change, while one that did is told, and
// every message after the acknowledgment carries the subscription id.
func TestListenDeliversOnlyWhatTheClientOptedInto(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")
	optedIn := listenModern(t, b, w.adaKey)
	optedOut := listenModernFor(t, b, w.adaKey, map[string]any{"promptsListChanged": true})
	require.NotContains(t, string(optedOut.Ack.Params), "toolsListChanged", "the acknowledgment grants only what was asked and is supported")
	require.Contains(t, string(optedIn.Ack.Params), "toolsListChanged")
	w.setDenied(t, a, w.ada, "agent_status")
	m := expectChange(t, optedIn, 5*time.Second, "opted in")
	require.Equal(t, "notifications/tools/list_changed", m.Method)
	var params struct {
		Meta map[string]any `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(m.Params, &params))
	require.Equal(t, "listen-1", params.Meta["io.modelcontextprotocol/subscriptionId"])
	expectQuiet(t, optedOut, 500*time.Millisecond, "a stream that did not opt into toolsListChanged")
}

// TestTenantSettingsChangeReachesEveryAffectedCallerOfThatTenant is issue
// 5 items 2 and 3 for a tenant-wide input: renaming the tenant's server
// name makes ada's "mcp__acme__agent_status" deny entry start to match, so
// ada (and only ada) is told; the change carries no agent, so every stream
// of the tenant is recomputed and compared.
func TestTenantSettingsChangeReachesEveryAffectedCallerOfThatTenant(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")
	w.setDenied(t, a, w.ada, "mcp__acme__agent_status")
	require.Contains(t, toolNames(t, b, w.adaKey), "agent_status", "mcp__acme__ names no Visor tool while Visor is called visor")
	ada := listenLegacy(t, b, w.adaKey)
	bob := listenModern(t, b, w.bobKey)
	gil := listenModern(t, b, w.gilKey)
	operator := listenModern(t, b, w.operator)

	w.api(t, a, http.MethodPatch, "/tenants/acme", map[string]any{"settings": map[string]any{"server_name": "acme"}}, nil)
	expectChange(t, ada, 5*time.Second, "ada's deny entry now matches")
	require.NotContains(t, toolNames(t, b, w.adaKey), "agent_status")
	require.NotContains(t, toolNames(t, a, w.adaKey), "agent_status")
	expectQuiet(t, bob, 500*time.Millisecond, "bob's set did not change")
	expectQuiet(t, operator, 10*time.Millisecond, "the operator's set did not change")
	expectQuiet(t, gil, 10*time.Millisecond, "another tenant")
}

// TestRedisLossIsRepairedByReconciliation: Redis is killed
// mid-run, a change is made while it is down (its publication is lost), and
// after Redis returns the listener on the other replica is told within a
// few seconds.
func TestRedisLossIsRepairedByReconciliation(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	// Reconcile rarely on a timer, so the repair must come from the
	// resubscription after Redis returns.
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")
	ada := listenModern(t, b, w.adaKey)
	bob := listenLegacy(t, b, w.bobKey)

	// Sanity: the bus works.
	w.setDenied(t, a, w.ada, "agent_status")
	expectChange(t, ada, 5*time.Second, "before the outage")

	srv.Kill()
	w.setDenied(t, a, w.ada) // committed; its event is lost
	expectQuiet(t, ada, 500*time.Millisecond, "Redis is down")

	srv.Restart()
	recovered := time.Now()
	expectChange(t, ada, 10*time.Second, "after Redis returned")
	t.Logf("notified %s after Redis came back", time.Since(recovered).Round(time.Millisecond))
	require.Less(t, time.Since(recovered), 5*time.Second)
	require.GreaterOrEqual(t, metrics(t, b)["visor_live_reconcile_repairs_total"], 1.0, "the repair came from reconciliation, not the bus")
	require.Contains(t, toolNames(t, b, w.adaKey), "agent_status")
	expectQuiet(t, bob, 300*time.Millisecond, "bob's set never changed")

	// And the bus works again.
	w.setDenied(t, a, w.ada, "agent_status")
	expectChange(t, ada, 5*time.Second, "after recovery")
}

// TestRedisPauseIsRepaired: Redis freezes (SIGSTOP) rather than dying, so
// connections hang instead of failing; a change made meanwhile still
// reaches the listener within a few seconds of Redis resuming.
func TestRedisPauseIsRepaired(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")
	ada := listenModern(t, b, w.adaKey)
	srv.Pause()
	start := time.Now()
	w.setDenied(t, a, w.ada, "agent_status")
	require.Less(t, time.Since(start), 3*time.Second, "a frozen Redis must not hold up the committing request")
	// Sleep, not a signal: the subscriber notices a frozen Redis only by
	// its silence lasting, so the silence must last.
	time.Sleep(4 * time.Second)
	srv.Resume()
	resumed := time.Now()
	expectChange(t, ada, 10*time.Second, "after Redis resumed")
	t.Logf("notified %s after Redis resumed", time.Since(resumed).Round(time.Millisecond))
	require.Less(t, time.Since(resumed), 5*time.Second)
	require.NotContains(t, toolNames(t, b, w.adaKey), "agent_status")
}

// TestReconcilerRepairsWhileRedisIsDown: with the default period, a change
// made while Redis stays down still reaches the listener.
func TestReconcilerRepairsWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1s")
	ada := listenLegacy(t, b, w.adaKey)
	srv.Kill()
	start := time.Now()
	w.setDenied(t, a, w.ada, "agent_status")
	expectChange(t, ada, 5*time.Second, "periodic reconciliation while Redis is down")
	t.Logf("notified %s after the change with Redis down", time.Since(start).Round(time.Millisecond))
}

// TestScopedGrantEndToEnd: a scoped tool is hidden, ada
// asks with capability_request, an operator approves through replica A's
// admin API (time-limited), ada's listener on B is told and sees it; the
// grant expires and the tool disappears the same way; approved again
// without a limit, a revocation takes it away.
func TestScopedGrantEndToEnd(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")
	ctx := context.Background()
	scoped := identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: []string{"agent_status"}}}
	_, err := w.ids.UpdateAgent(ctx, w.acme.ID, w.ada.ID, func(ag *identity.Agent) error { ag.Settings = scoped; return nil })
	require.NoError(t, err)

	require.NotContains(t, toolNames(t, b, w.adaKey), "agent_status", "a scoped tool is hidden until granted")
	require.Contains(t, toolNames(t, b, w.adaKey), "capability_request")
	ada := listenModern(t, b, w.adaKey)
	bob := listenModern(t, b, w.bobKey)

	reqID := capabilityRequest(t, b, w.adaKey, "agent_status")
	expectQuiet(t, ada, 300*time.Millisecond, "a pending request shows nothing new")

	var approved struct {
		Grant struct {
			ID        string     `json:"id"`
			ExpiresAt *time.Time `json:"expires_at"`
		} `json:"grant"`
	}
	w.api(t, a, http.MethodPost, "/tenants/acme/grants/requests/"+reqID+"/approve", map[string]any{"ttl_seconds": 2}, &approved)
	require.NotNil(t, approved.Grant.ExpiresAt)
	expectChange(t, ada, 5*time.Second, "approval")
	require.Contains(t, toolNames(t, b, w.adaKey), "agent_status")
	require.Contains(t, toolNames(t, a, w.adaKey), "agent_status")

	expectChange(t, ada, 6*time.Second, "expiry")
	require.NotContains(t, toolNames(t, b, w.adaKey), "agent_status")

	reqID = capabilityRequest(t, b, w.adaKey, "agent_status")
	w.api(t, a, http.MethodPost, "/tenants/acme/grants/requests/"+reqID+"/approve", nil, &approved)
	expectChange(t, ada, 5*time.Second, "second approval")
	require.Contains(t, toolNames(t, b, w.adaKey), "agent_status")
	w.api(t, a, http.MethodDelete, "/tenants/acme/grants/"+approved.Grant.ID, nil, nil)
	expectChange(t, ada, 5*time.Second, "revocation")
	require.NotContains(t, toolNames(t, b, w.adaKey), "agent_status")
	expectQuiet(t, bob, 100*time.Millisecond, "bob was never affected")
}

// capabilityRequest calls capability_request as token and returns the
// request id.
func capabilityRequest(t *testing.T, r *replica, token, tool string) string {
	t.Helper()
	res, _ := mcpPost(t, r, token, modernVersion, "", map[string]any{"id": 99, "method": "tools/call", "params": map[string]any{
		"_meta": modernMeta(), "name": "capability_request", "arguments": map[string]any{"tool": tool, "reason": "needed for the e2e task"}}})
	require.Nil(t, res.Error)
	var out struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			RequestID string `json:"request_id"`
		} `json:"structuredContent"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(res.Result, &out))
	require.False(t, out.IsError, "%s", res.Result)
	require.NotEmpty(t, out.StructuredContent.RequestID, "%s", res.Result)
	return out.StructuredContent.RequestID
}

var (
	_ = io.Discard
	_ = pgtest.AdminURL
)
