package mcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
)

func TestLegacyErasSessionsListPagesCallDelete(t *testing.T) {
	f := newFixture(t)
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			id := f.session(t, "emp", v)
			hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": v}
			var names []string
			cursor := ""
			for page := 0; ; page++ {
				params := `{}`
				if cursor != "" {
					params = fmt.Sprintf(`{"cursor":%q}`, cursor)
				}
				res := f.rpc(t, "emp", hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, 10+page, params)).result(t)
				names = append(names, toolNames(res)...)
				next, _ := res["nextCursor"].(string)
				if next == "" {
					break
				}
				cursor = next
			}
			// Exactly the allowed tools (github_issue is hidden), in stable order.
			require.Equal(t, []string{"agent_status", "old_status", "plain_write", "zz_tool_0", "zz_tool_1", "zz_tool_2", "zz_tool_3", "zz_tool_4"}, names)

			res := f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_status","arguments":{"text":"hi"}}}`).result(t)
			require.Equal(t, "echo: hi", res["content"].([]any)[0].(map[string]any)["text"])

			req, _ := http.NewRequest(http.MethodDelete, f.url, nil)
			req.Header.Set("Authorization", "Bearer emp")
			req.Header.Set("Mcp-Session-Id", id)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
			require.Eventually(t, func() bool {
				return f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":3,"method":"ping"}`).status == http.StatusNotFound
			}, 2*time.Second, 20*time.Millisecond)
		})
	}
}

func TestSessionBoundToItsPrincipal(t *testing.T) {
	f := newFixture(t)
	id := f.session(t, "op", "2025-11-25")
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"}
	require.Equal(t, http.StatusOK, f.rpc(t, "op", hdr, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).status)
	r := f.rpc(t, "op2", hdr, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	require.Equal(t, http.StatusNotFound, r.status, "another principal presenting the id")
	r = f.rpc(t, "op", map[string]string{"Mcp-Session-Id": "no-such-session"}, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	require.Equal(t, http.StatusNotFound, r.status)
}

func TestOriginAndBodyLimit(t *testing.T) {
	f := newFixture(t)
	r := f.rpc(t, "op", map[string]string{"Origin": "http://evil.example.com"}, fmt.Sprintf(initBody, "2025-11-25"))
	require.Equal(t, http.StatusForbidden, r.status)
	r = f.rpc(t, "op", map[string]string{"Origin": "http://localhost:9999"}, fmt.Sprintf(initBody, "2025-11-25"))
	require.Equal(t, http.StatusOK, r.status, "an Origin naming the endpoint's own (loopback) host is fine")
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":%q}}`, strings.Repeat("x", 70<<10))
	require.Equal(t, http.StatusRequestEntityTooLarge, f.rpc(t, "op", nil, big).status)
}

func TestModernEraStatelessListDiscoverHeaders(t *testing.T) {
	f := newFixture(t)
	r := f.rpc(t, "emp", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Empty(t, r.header.Get("Mcp-Session-Id"), "stateless")
	res := r.result(t)
	require.Equal(t, "private", res["cacheScope"])
	require.EqualValues(t, 60000, res["ttlMs"])
	require.Equal(t, []string{"agent_status", "old_status", "plain_write"}, toolNames(res))
	alias := res["tools"].([]any)[1].(map[string]any)
	require.Equal(t, "[deprecated → agent_status] Read status.", alias["description"], "listed with the prefix")
	res = f.rpc(t, "emp", modernHeaders("tools/call", "old_status"),
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"old_status","arguments":{"text":"via alias"},`+modernMeta+`}}`).result(t)
	require.Equal(t, "echo: via alias", res["content"].([]any)[0].(map[string]any)["text"], "dispatches to the new tool")

	res = f.rpc(t, "emp", modernHeaders("server/discover", ""), `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+modernMeta+`}}`).result(t)
	require.Contains(t, res["supportedVersions"], "2026-07-28")

	missing := map[string]string{"Mcp-Protocol-Version": "2026-07-28"}
	e := f.rpc(t, "emp", missing, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+modernMeta+`}}`).rpcErr(t)
	require.EqualValues(t, -32020, e["code"], "missing Mcp-Method")
	e = f.rpc(t, "emp", modernHeaders("tools/call", "plain_write"), `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"agent_status",`+modernMeta+`}}`).rpcErr(t)
	require.EqualValues(t, -32020, e["code"], "Mcp-Name mismatch")
	e = f.rpc(t, "emp", map[string]string{"Mcp-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"},
		`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{`+strings.ReplaceAll(modernMeta, "2026-07-28", "2027-01-01")+`}}`).rpcErr(t)
	require.EqualValues(t, -32022, e["code"], "unsupported version")
}

func TestCallPolicyErrorsAndAudit(t *testing.T) {
	f := newFixture(t)
	call := func(token, name, args string) reply {
		return f.rpc(t, token, modernHeaders("tools/call", name),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, name, args, modernMeta))
	}
	// A hidden tool called by name is refused by its gate, with the gate's message.
	e := call("emp", "github_issue", `{}`).rpcErr(t)
	require.EqualValues(t, tools.CodeRefused, e["code"])
	require.Contains(t, e["message"], "GitHub integration is off")
	// Validation and business failures are isError results the model reads.
	res := call("emp", "plain_write", `{}`).result(t)
	require.Equal(t, true, res["isError"])
	require.Contains(t, res["content"].([]any)[0].(map[string]any)["text"], "missing required parameter text")
	res = call("emp", "plain_write", `{"text":"fail"}`).result(t)
	require.Equal(t, true, res["isError"])
	require.Contains(t, res["content"].([]any)[0].(map[string]any)["text"], "may not be fail")
	// An unknown tool is a protocol fault.
	require.EqualValues(t, -32602, call("emp", "nope", `{}`).rpcErr(t)["code"])
	// An external client lacking the scope gets a step-up.
	r := call("ext-read", "plain_write", `{"text":"x"}`)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, r.header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="tools:write"`)

	rows := f.audit.Entries()
	require.Len(t, rows, 5, "one row per call and per refusal")
	require.Equal(t, tools.EventCapabilityDenied, rows[0].Event)
	require.Equal(t, audit.OutcomeRefused, rows[0].Outcome)
	require.EqualValues(t, tools.CodeRefused, rows[0].Code)
	require.Equal(t, audit.OutcomeToolError, rows[1].Outcome)
	require.Equal(t, tools.EventUnknownTool, rows[3].Event)
	require.Equal(t, tools.EventScopeDenied, rows[4].Event)
	require.Equal(t, "employee", rows[0].PrincipalKind)
	require.Equal(t, "agent:"+f.agent.ID.String(), rows[0].PrincipalID)
	require.Len(t, rows[2].ArgsDigest, 64)
	require.NotContains(t, rows[2].ArgsDigest, "fail")
}

// readEvents streams SSE data lines from resp to ch.
func readEvents(resp *http.Response, ch chan<- string) {
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			ch <- d
		}
	}
	close(ch)
}

func TestListChangedReachesOneStream(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A legacy GET stream.
	id := f.session(t, "emp", "2025-11-25")
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	get.Header.Set("Authorization", "Bearer emp")
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", id)
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	legacyResp, err := http.DefaultClient.Do(get)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, legacyResp.StatusCode)
	legacyEvents := make(chan string, 10)
	go readEvents(legacyResp, legacyEvents)
	f.hub.wait(t, 1)

	// A 2026-07-28 listen stream of another principal.
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	post, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url, strings.NewReader(body))
	for k, v := range modernHeaders("subscriptions/listen", "") {
		post.Header.Set(k, v)
	}
	post.Header.Set("Authorization", "Bearer op")
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("Accept", "application/json, text/event-stream")
	listenResp, err := http.DefaultClient.Do(post)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, listenResp.StatusCode)
	listenEvents := make(chan string, 10)
	go readEvents(listenResp, listenEvents)
	streams := f.hub.wait(t, 2)
	require.Contains(t, <-listenEvents, "notifications/subscriptions/acknowledged")

	for _, s := range streams {
		if s.Principal().Kind == "operator" {
			require.NoError(t, s.NotifyToolsChanged(ctx))
		}
	}
	select {
	case ev := <-listenEvents:
		require.Contains(t, ev, `"method":"notifications/tools/list_changed"`)
		require.Contains(t, ev, `"io.modelcontextprotocol/subscriptionId":"L1"`)
	case <-time.After(3 * time.Second):
		t.Fatal("listen stream got no list_changed")
	}
	select {
	case ev := <-legacyEvents:
		t.Fatalf("the other principal's stream heard %s", ev)
	case <-time.After(200 * time.Millisecond):
	}
	for _, s := range streams {
		if s.Principal().Kind == "employee" {
			require.NoError(t, s.NotifyToolsChanged(ctx))
		}
	}
	select {
	case ev := <-legacyEvents:
		require.Contains(t, ev, `"method":"notifications/tools/list_changed"`)
	case <-time.After(3 * time.Second):
		t.Fatal("legacy GET stream got no list_changed")
	}
	cancel()
	f.hub.wait(t, 0)
}

// TestListenStreamRegisteredBeforeItsAcknowledgment: the client hears the
// acknowledgment only once the stream is registered with the hub, so no
// change made after the acknowledgment can go unannounced, and none made
// while the hub registers it is announced on it.
func TestListenStreamRegisteredBeforeItsAcknowledgment(t *testing.T) {
	f := newFixture(t)
	heard := make(chan struct{})
	var early atomic.Bool
	f.hub.opening = func(live.Stream) {
		select {
		case <-heard:
			early.Store(true)
		case <-time.After(time.Second):
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	post, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url, strings.NewReader(body))
	for k, v := range modernHeaders("subscriptions/listen", "") {
		post.Header.Set(k, v)
	}
	post.Header.Set("Authorization", "Bearer op")
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("Accept", "application/json, text/event-stream")
	events := make(chan string, 10)
	go func() {
		resp, err := http.DefaultClient.Do(post)
		if err != nil {
			close(events)
			return
		}
		readEvents(resp, events)
	}()
	select {
	case ev := <-events:
		require.Contains(t, ev, "notifications/subscriptions/acknowledged")
		close(heard)
	case <-time.After(5 * time.Second):
		t.Fatal("no acknowledgment")
	}
	f.hub.wait(t, 1)
	require.False(t, early.Load(), "the acknowledgment was sent before the stream was registered")
	cancel()
	f.hub.wait(t, 0)
}

func TestListenFallsBackToTheSDKForAnythingElse(t *testing.T) {
	f := newFixture(t)
	// A filter without tools/list_changed: acknowledged empty and answered at once.
	r := f.rpc(t, "emp", modernHeaders("subscriptions/listen", ""),
		`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{"promptsListChanged":true},`+modernMeta+`}}`)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, r.body, `"notifications":{}`)
	require.Contains(t, r.body, `"id":3,"result"`)
	require.Empty(t, f.hub.streams)
	// A header mismatch is the SDK's -32020.
	hdr := modernHeaders("tools/list", "")
	e := f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+modernMeta+`}}`).rpcErr(t)
	require.EqualValues(t, -32020, e["code"])
}

// TestTwoReplicas shows the documented deployment rule: 2026-07-28 requests
// need no affinity, while a legacy session lives on the replica that created
// it (route by Mcp-Session-Id); elsewhere it is an unknown session (404) and
// the client re-initializes.
func TestTwoReplicas(t *testing.T) {
	f := newFixture(t)
	a, b := f.url, f.mount()
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	for _, u := range []string{a, b} {
		f.url = u
		require.Equal(t, []string{"agent_status", "old_status", "plain_write"}, toolNames(f.rpc(t, "emp", modernHeaders("tools/list", ""), list).result(t)))
	}
	f.url = a
	id := f.session(t, "emp", "2025-11-25")
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"}
	require.Equal(t, http.StatusOK, f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).status)
	f.url = b
	require.Equal(t, http.StatusNotFound, f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).status)
}

func TestCloseEndsHeldStreams(t *testing.T) {
	f := newFixture(t)
	ep := New(tools.NewRegistry(), tools.NewSubjects(f.dir, tools.NoGrants{}, 0), f.audit, f.hub, Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep.ServeTenant(w, r.WithContext(identity.WithPrincipal(r.Context(), f.tokens["op"])), "acme")
	}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	for k, v := range modernHeaders("subscriptions/listen", "") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	f.hub.wait(t, 1)
	ep.Close()
	_, err = io.ReadAll(resp.Body) // the stream ends instead of hanging
	require.NoError(t, err)
	f.hub.wait(t, 0)
}

type failingAudit struct{}

func (failingAudit) Record(context.Context, audit.Entry) error { return fmt.Errorf("disk full") }

// TestResultWithheldWithoutDurableAudit: when the audit row cannot be made
// durable, the caller gets an error, never the tool's result.
func TestResultWithheldWithoutDurableAudit(t *testing.T) {
	f := newFixture(t)
	reg := tools.NewRegistry()
	reg.Register(tools.Tool{Name: "agent_status", Description: "x", Scope: identity.ScopeToolsRead, Handler: echoTool,
		Params: []tools.Param{{Name: "text", Type: "string", Description: "t"}}})
	ep := New(reg, tools.NewSubjects(f.dir, tools.NoGrants{}, 0), failingAudit{}, f.hub, Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep.ServeTenant(w, r.WithContext(identity.WithPrincipal(r.Context(), f.tokens["emp"])), "acme")
	}))
	defer srv.Close()
	f.url = srv.URL
	r := f.rpc(t, "emp", modernHeaders("tools/call", "agent_status"),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_status","arguments":{"text":"secret result"},`+modernMeta+`}}`)
	e := r.rpcErr(t)
	require.EqualValues(t, -32603, e["code"])
	require.NotContains(t, r.body, "secret result")
}

// TestStreamCloseEndsOnlyThatStream: when the hub closes a listen stream
// whose credential was revoked, that response ends cleanly, nothing more is
// written on it, and the other streams stay open.
func TestStreamCloseEndsOnlyThatStream(t *testing.T) {
	f := newFixture(t)
	ep := New(tools.NewRegistry(), tools.NewSubjects(f.dir, tools.NoGrants{}, 0), f.audit, f.hub, Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep.ServeTenant(w, r.WithContext(identity.WithPrincipal(r.Context(), f.tokens["op"])), "acme")
	}))
	defer srv.Close()
	defer ep.Close() // before srv.Close, which waits for held streams
	listen := func(id int, extra ...string) chan error {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, id, modernMeta)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		for k, v := range modernHeaders("subscriptions/listen", "") {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer op")
		for i := 0; i+1 < len(extra); i += 2 {
			req.Header.Set(extra[i], extra[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { _, err := io.ReadAll(resp.Body); resp.Body.Close(); done <- err }()
		return done
	}
	held := listen(1)
	first := f.hub.wait(t, 1)[0]
	other := listen(2)
	f.hub.wait(t, 2)

	first.Close()
	select {
	case err := <-held:
		require.NoError(t, err, "the response ends cleanly")
	case <-time.After(5 * time.Second):
		t.Fatal("the closed listen stream is still open")
	}
	require.ErrorIs(t, first.NotifyToolsChanged(context.Background()), errStreamClosed, "nothing is written after Close")
	f.hub.wait(t, 1)

	// A listen request the endpoint hands to the SDK (an unexpected
	// Mcp-Name header does that) is held by the SDK: Close cancels it and
	// the SDK completes the response.
	sdkHeld := listen(3, "Mcp-Name", "x")
	var third live.Stream
	for _, s := range f.hub.wait(t, 2) {
		if _, ok := s.(*stream); ok {
			third = s
		}
	}
	require.NotNil(t, third, "the SDK-held listen stream is registered")
	third.Close()
	select {
	case err := <-sdkHeld:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the closed SDK-held listen stream is still open")
	}
	f.hub.wait(t, 1)
	select {
	case <-other:
		t.Fatal("another stream ended")
	case <-time.After(100 * time.Millisecond):
	}
}
