package mcp

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The endpoint answers a plain 2026-07-28 tools/list itself, from the list
// cache; its answer must be the SDK's, byte for byte, and anything unusual
// must still reach the SDK.
func TestListAnsweredByTheEndpointIsTheSDKsAnswer(t *testing.T) {
	f := newFixture(t)
	plain := func(id, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/list","params":{%s%s}}`, id, params, modernMeta)
	}
	// The same request through the SDK: an extra _meta member the endpoint
	// does not read sends it there, and the SDK ignores it.
	viaSDK := func(id, params string) string {
		return strings.Replace(plain(id, params), `"_meta":{`, `"_meta":{"x-trace":"1",`, 1)
	}
	hdr := modernHeaders("tools/list", "")
	for _, id := range []string{"1", `"req-7"`} {
		cursor := ""
		for page := 0; page < 5; page++ {
			params := ""
			if cursor != "" {
				params = fmt.Sprintf(`"cursor":%q,`, cursor)
			}
			before := f.ep.listsServed.Load()
			fast := f.rpc(t, "emp", hdr, plain(id, params))
			require.Equal(t, before+1, f.ep.listsServed.Load(), "answered by the endpoint")
			slow := f.rpc(t, "emp", hdr, viaSDK(id, params))
			require.Equal(t, before+1, f.ep.listsServed.Load(), "answered by the SDK")
			require.Equal(t, http.StatusOK, fast.status)
			require.Equal(t, slow.body, fast.body)
			for _, k := range []string{"Content-Type", "Cache-Control", "Connection", "Mcp-Session-Id"} {
				require.Equal(t, slow.header.Get(k), fast.header.Get(k), k)
			}
			res := fast.result(t)
			require.Equal(t, "private", res["cacheScope"])
			next, _ := res["nextCursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
	}

	// With the cache off, every list goes through the SDK, and reads the same.
	want := f.rpc(t, "emp", hdr, plain("3", "")).body
	f.listCache = -1
	f.url = f.mount()
	require.Equal(t, want, f.rpc(t, "emp", hdr, plain("3", "")).body)
	require.Zero(t, f.ep.listsServed.Load())
}

func TestListTheEndpointDoesNotAnswerGoesToTheSDK(t *testing.T) {
	f := newFixture(t)
	hdr := modernHeaders("tools/list", "")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	for _, c := range []struct {
		name string
		hdr  map[string]string
		body string
		code int64 // the SDK's JSON-RPC error, 0 for a result
	}{
		{"bad cursor", hdr, strings.Replace(body, `"params":{`, `"params":{"cursor":"bm9wZQ",`, 1), -32602},
		{"cursor not a string", hdr, strings.Replace(body, `"params":{`, `"params":{"cursor":5,`, 1), -32602},
		{"no Mcp-Method", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, body, -32020},
		{"no client capabilities", hdr, strings.Replace(body, `,"io.modelcontextprotocol/clientCapabilities":{}`, "", 1), -32602},
		{"client capabilities not an object", hdr, strings.Replace(body, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"roots":5}`, 1), -32602},
		{"client info not an object", hdr, strings.Replace(body, `{"name":"t","version":"1"}`, `7`, 1), -32602},
		{"id with an escape", hdr, strings.Replace(body, `"id":1`, `"id":"a\u0041"`, 1), 0},
		{"negative id", hdr, strings.Replace(body, `"id":1`, `"id":-1`, 1), 0},
		{"extra member", hdr, strings.Replace(body, `"id":1`, `"id":1,"x":true`, 1), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := f.ep.listsServed.Load()
			r := f.rpc(t, "emp", c.hdr, c.body)
			require.Equal(t, before, f.ep.listsServed.Load(), "not the endpoint's to answer")
			if c.code != 0 {
				require.EqualValues(t, c.code, r.rpcErr(t)["code"], r.body)
				return
			}
			require.NotEmpty(t, toolNames(r.result(t)))
		})
	}
}

func TestSessionListAnsweredByTheEndpointIsTheSDKsAnswer(t *testing.T) {
	f := newFixture(t)
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			hdr := map[string]string{"Mcp-Session-Id": f.session(t, "emp", v), "Mcp-Protocol-Version": v}
			cursor := ""
			for page := 0; page < 5; page++ {
				params, viaSDK := `{}`, `{"_meta":{}}` // an empty _meta, which the SDK ignores, sends it to the SDK
				if cursor != "" {
					params = fmt.Sprintf(`{"cursor":%q}`, cursor)
					viaSDK = fmt.Sprintf(`{"cursor":%q,"_meta":{}}`, cursor)
				}
				before := f.ep.listsServed.Load()
				fast := f.rpc(t, "emp", hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, page, params))
				require.Equal(t, before+1, f.ep.listsServed.Load(), "answered by the endpoint")
				slow := f.rpc(t, "emp", hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, page, viaSDK))
				require.Equal(t, before+1, f.ep.listsServed.Load(), "answered by the SDK")
				require.Equal(t, slow.body, fast.body)
				require.Equal(t, slow.header.Get("Content-Type"), fast.header.Get("Content-Type"))
				next, _ := fast.result(t)["nextCursor"].(string)
				if next == "" {
					break
				}
				cursor = next
			}
			// Another principal presenting the session id is not answered.
			before := f.ep.listsServed.Load()
			r := f.rpc(t, "op", hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			require.Equal(t, http.StatusNotFound, r.status)
			require.Equal(t, before, f.ep.listsServed.Load())
		})
	}
}

// A session whose only requests are lists the endpoint answers stays open;
// an idle one is closed after the session timeout.
func TestSessionKeptOpenByListsClosedWhenIdle(t *testing.T) {
	f := newFixture(t)
	f.sessionTimeout = 300 * time.Millisecond
	f.url = f.mount()
	hdr := map[string]string{"Mcp-Session-Id": f.session(t, "emp", "2025-11-25"), "Mcp-Protocol-Version": "2025-11-25"}
	for i := range 10 {
		before := f.ep.listsServed.Load()
		r := f.rpc(t, "emp", hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i))
		require.Equal(t, http.StatusOK, r.status, "list %d, %s", i, r.body)
		require.Equal(t, before+1, f.ep.listsServed.Load())
		// Sleep, not a signal: the session timeout is wall-clock time,
		// and the requests must be spread over more than one of it.
		time.Sleep(100 * time.Millisecond)
	}
	// Any request restarts the timer, so only one is sent, after three
	// timeouts without any.
	// Sleep, not a signal: idleness is the input; nothing happens to
	// wait for until the timer fires.
	time.Sleep(900 * time.Millisecond)
	require.Equal(t, http.StatusNotFound, f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":99,"method":"ping"}`).status, "closed once idle")
}
