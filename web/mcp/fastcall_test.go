package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// callCases are tools/calls of every kind of answer: a result, a tool
// error, a listed tool's refusal (a result), a hidden tool's refusal and an
// unknown name (JSON-RPC errors), invalid params, a tool that is not
// read-only (a pending row first), a deprecated name, text the encoder
// escapes.
var callCases = []struct {
	name, who, tool, args string
}{
	{"result", "emp", "agent_status", `{"text":"hi"}`},
	{"no arguments", "emp", "agent_status", ``},
	{"escaped text", "emp", "agent_status", `{"text":"<a href=\"x\">&amp; \u00e9 \u2028 \\ done</a>"}`},
	{"tool error", "emp", "agent_status", `{"text":"fail"}`},
	{"refused by the tool", "emp", "agent_status", `{"text":"refuse"}`},
	{"refused and hidden", "emp", "github_issue", `{}`},
	{"unknown tool", "emp", "no_such_tool", `{}`},
	{"invalid params: wrong type", "emp", "agent_status", `{"text":5}`},
	{"invalid params: unknown", "emp", "agent_status", `{"txet":"a"}`},
	{"invalid params: missing", "emp", "plain_write", `{}`},
	{"invalid params: not an object", "emp", "agent_status", `"text"`},
	{"invalid params: null", "emp", "plain_write", `null`},
	{"not read-only", "emp", "plain_write", `{"text":"written"}`},
	{"deprecated name", "emp", "old_status", `{"text":"old"}`},
}

// callMsg is a tools/call; extra is more params members, each followed by
// a comma.
func callMsg(id, tool, args, extra string) string {
	a := ""
	if args != "" {
		a = `"arguments":` + args + `,`
	}
	return strings.TrimSuffix(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,%s%s`, id, tool, a, extra), ",") + "}}"
}

// rowsSince returns the audit rows recorded after the first n, without
// what differs between two calls (id, time, latency).
func rowsSince(f *fixture, n int) []audit.Entry {
	var out []audit.Entry
	for _, e := range f.audit.Entries()[n:] {
		e.ID, e.At, e.Latency = uuid.Nil, time.Time{}, 0
		out = append(out, e)
	}
	return out
}

// The endpoint answers a plain tools/call itself; its answer must be the
// SDK's, byte for byte, with the same audit rows, in every era.
func TestCallAnsweredByTheEndpointIsTheSDKsAnswer(t *testing.T) {
	f := newFixture(t)
	type era struct {
		name      string
		hdr       func(tool string) map[string]string
		plain     func(id, tool, args string) string
		viaSDK    func(id, tool, args string) string
		sessioned bool
	}
	eras := []era{{
		name:  "2026-07-28",
		hdr:   func(tool string) map[string]string { return modernHeaders("tools/call", tool) },
		plain: func(id, tool, args string) string { return callMsg(id, tool, args, modernMeta+",") },
		// An extra _meta member the endpoint does not read sends it to the
		// SDK, which ignores it.
		viaSDK: func(id, tool, args string) string {
			return strings.Replace(callMsg(id, tool, args, modernMeta+","), `"_meta":{`, `"_meta":{"x-trace":"1",`, 1)
		},
	}}
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		eras = append(eras, era{
			name: v,
			hdr: func(string) map[string]string {
				return map[string]string{"Mcp-Protocol-Version": v}
			},
			plain: func(id, tool, args string) string { return callMsg(id, tool, args, "") },
			// An empty _meta, which the SDK ignores, sends it to the SDK.
			viaSDK:    func(id, tool, args string) string { return callMsg(id, tool, args, `"_meta":{},`) },
			sessioned: true,
		})
	}
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			session := map[string]string{}
			for _, c := range callCases {
				t.Run(c.name, func(t *testing.T) {
					hdr := e.hdr(c.tool)
					if e.sessioned {
						if session[c.who] == "" {
							session[c.who] = f.session(t, c.who, e.name)
						}
						hdr["Mcp-Session-Id"] = session[c.who]
					}
					for _, id := range []string{"7", `"req-7"`} {
						before, rows := f.ep.callsServed.Load(), len(f.audit.Entries())
						fast := f.rpc(t, c.who, hdr, e.plain(id, c.tool, c.args))
						require.Equal(t, before+1, f.ep.callsServed.Load(), "answered by the endpoint: %s", fast.body)
						fastRows := rowsSince(f, rows)
						rows = len(f.audit.Entries())
						slow := f.rpc(t, c.who, hdr, e.viaSDK(id, c.tool, c.args))
						require.Equal(t, before+1, f.ep.callsServed.Load(), "answered by the SDK")
						require.Equal(t, slow.status, fast.status)
						require.Equal(t, slow.body, fast.body)
						for _, k := range []string{"Content-Type", "Cache-Control", "Connection", "Mcp-Session-Id"} {
							require.Equal(t, slow.header.Get(k), fast.header.Get(k), k)
						}
						require.NotEmpty(t, fastRows, "audited")
						require.Equal(t, rowsSince(f, rows), fastRows, "the same audit rows")
					}
				})
			}
		})
	}
}

// When the audit trail cannot take a call's row, the endpoint's answer is
// still the SDK's: a tool that is not read-only is not run without its
// pending row; a result is withheld when its row cannot be completed.
func TestCallWhoseRowCannotBeRecordedIsAnsweredAsTheSDKDoes(t *testing.T) {
	f := newFixture(t)
	unavailable := fault.New(fault.Unavailable, "the audit trail is unavailable")
	ran := 0
	for _, c := range []struct {
		name, tool, want string
		refuse           func(audit.Entry) error
	}{
		{"no pending row", "plain_write", "the call was not run", func(e audit.Entry) error {
			if e.Outcome == audit.OutcomePending {
				return unavailable
			}
			return nil
		}},
		{"no completed row", "plain_write", "the call ran and is recorded as pending", func(e audit.Entry) error {
			if e.Outcome != audit.OutcomePending {
				return unavailable
			}
			return nil
		}},
		{"no row of a read-only call", "agent_status", "the result was withheld", func(audit.Entry) error { return unavailable }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.refuseAudit = c.refuse
			defer func() { f.refuseAudit = nil }()
			hdr := modernHeaders("tools/call", c.tool)
			before := f.ep.callsServed.Load()
			fast := f.rpc(t, "emp", hdr, callMsg("1", c.tool, `{"text":"x"}`, modernMeta+","))
			require.Equal(t, before+1, f.ep.callsServed.Load())
			slow := f.rpc(t, "emp", hdr, strings.Replace(callMsg("1", c.tool, `{"text":"x"}`, modernMeta+","), `"_meta":{`, `"_meta":{"x-trace":"1",`, 1))
			require.Equal(t, before+1, f.ep.callsServed.Load())
			require.Equal(t, slow.body, fast.body)
			require.EqualValues(t, -32603, fast.rpcErr(t)["code"])
			require.Contains(t, fast.rpcErr(t)["message"], c.want)
			ran++
		})
	}
	require.Equal(t, 3, ran)
}

func TestCallTheEndpointDoesNotAnswerGoesToTheSDK(t *testing.T) {
	f := newFixture(t)
	hdr := modernHeaders("tools/call", "agent_status")
	body := callMsg("1", "agent_status", `{"text":"hi"}`, modernMeta+",")
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range hdr {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	for _, c := range []struct {
		name string
		hdr  map[string]string
		body string
		code int64 // the SDK's JSON-RPC error, 0 for a result
	}{
		{"no Mcp-Name", with("Mcp-Name", ""), body, -32020},
		{"Mcp-Name of another tool", with("Mcp-Name", "plain_write"), body, -32020},
		{"no Mcp-Method", with("Mcp-Method", ""), body, -32020},
		{"name not a string", with("Mcp-Name", "5"), strings.Replace(body, `"name":"agent_status"`, `"name":5`, 1), -32020},
		{"no client capabilities", hdr, strings.Replace(body, `,"io.modelcontextprotocol/clientCapabilities":{}`, "", 1), -32602},
		{"client info not an object", hdr, strings.Replace(body, `{"name":"t","version":"1"}`, `7`, 1), -32602},
		{"progress token", hdr, strings.Replace(body, `"_meta":{`, `"_meta":{"progressToken":"p1",`, 1), 0},
		{"name in other case", hdr, strings.Replace(body, `"name":`, `"Name":"x","name":`, 1), 0},
		{"id with an escape", hdr, strings.Replace(body, `"id":1`, `"id":"a\u0041"`, 1), 0},
		{"negative id", hdr, strings.Replace(body, `"id":1`, `"id":-1`, 1), 0},
		{"extra member", hdr, strings.Replace(body, `"id":1`, `"id":1,"x":true`, 1), 0},
		{"many nested arguments", hdr, strings.Replace(body, `{"text":"hi"}`, `{"text":"hi","x":`+strings.Repeat("[", 600)+strings.Repeat("]", 600)+`,"y":`+strings.Repeat("[", 500)+strings.Repeat("]", 500)+`}`, 1), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, rows := f.ep.callsServed.Load(), len(f.audit.Entries())
			r := f.rpc(t, "emp", c.hdr, c.body)
			require.Equal(t, before, f.ep.callsServed.Load(), "not the endpoint's to answer")
			if c.code != 0 {
				require.EqualValues(t, c.code, r.rpcErr(t)["code"], r.body)
				return
			}
			r.result(t)
			require.Len(t, f.audit.Entries(), rows+1, "the SDK's path audits it")
		})
	}

	// A legacy session's call with _meta (a progress token) goes to the SDK.
	shdr := map[string]string{"Mcp-Session-Id": f.session(t, "emp", "2025-11-25"), "Mcp-Protocol-Version": "2025-11-25"}
	before := f.ep.callsServed.Load()
	r := f.rpc(t, "emp", shdr, callMsg("2", "agent_status", `{"text":"hi"}`, `"_meta":{"progressToken":"p"},`))
	require.Equal(t, before, f.ep.callsServed.Load())
	require.Equal(t, "echo: hi", r.result(t)["content"].([]any)[0].(map[string]any)["text"])
	// So does one whose protocol version header is not the session's.
	r = f.rpc(t, "emp", map[string]string{"Mcp-Session-Id": shdr["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-06-18"},
		callMsg("3", "agent_status", `{"text":"hi"}`, ""))
	require.Equal(t, before, f.ep.callsServed.Load(), r.body)
	// And another principal presenting the session id is not answered.
	r = f.rpc(t, "op", shdr, callMsg("4", "agent_status", `{"text":"hi"}`, ""))
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, before, f.ep.callsServed.Load())
}

// In a legacy session a call the endpoint answers is cancelled as the SDK's
// are, by notifications/cancelled naming its id, and an id already in flight
// is refused as the SDK refuses it.
func TestSessionCallCancelledAndDuplicateIDRefusedAsTheSDKDoes(t *testing.T) {
	f := newFixture(t)
	for _, via := range []struct{ name, extra string }{{"endpoint", ""}, {"SDK", `"_meta":{},`}} {
		t.Run(via.name, func(t *testing.T) {
			hdr := map[string]string{"Mcp-Session-Id": f.session(t, "emp", "2025-11-25"), "Mcp-Protocol-Version": "2025-11-25"}
			before := f.ep.callsServed.Load()
			// Two calls with one id, each blocking until cancelled: whichever
			// arrives second is refused at once.
			done := make(chan reply, 2)
			for range 2 {
				go func() { done <- f.rpc(t, "emp", hdr, callMsg(`"b1"`, "agent_status", `{"text":"block"}`, via.extra)) }()
			}
			var dup reply
			select {
			case dup = <-done:
			case <-time.After(8 * time.Second):
				t.Fatal("neither call was refused")
			}
			require.Equal(t, http.StatusBadRequest, dup.status, dup.body)
			require.Equal(t, `{"jsonrpc":"2.0","id":"b1","error":{"code":-32600,"message":"duplicate in-flight request ID b1"}}`, strings.TrimSpace(dup.body))
			require.Equal(t, "application/json", dup.header.Get("Content-Type"))
			start := time.Now()
			n := f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b1"}}`)
			require.Equal(t, http.StatusAccepted, n.status)
			select {
			case r := <-done:
				require.Less(t, time.Since(start), 5*time.Second, "cancelled, not timed out: %s", r.body)
			case <-time.After(8 * time.Second):
				t.Fatal("the call was not cancelled")
			}
			if via.extra == "" {
				require.Greater(t, f.ep.callsServed.Load(), before)
			} else {
				require.Equal(t, before, f.ep.callsServed.Load())
			}
		})
	}
}

// The endpoint writes a one-text result itself; it must be what encoding
// the result as the SDK does gives, whatever the text holds.
func TestPlainTextResultEncodedAsTheSDKEncodesIt(t *testing.T) {
	h := New(tools.NewRegistry(), nil, &audit.Memory{}, nil, Options{Version: "1.2.<3>"})
	for _, text := range []string{"", "hi", `<a href="x">&amp;</a>`, "line\nbreak\ttab\x00nul\x1f", "\u2028\u2029", "\xff\xfe broken",
		"quote \" and \\ backslash", "日本語 and 😀", strings.Repeat("long ", 1000)} {
		for _, isError := range []bool{false, true} {
			for _, modern := range []bool{false, true} {
				mk := func() *sdk.CallToolResult {
					return &sdk.CallToolResult{IsError: isError, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
				}
				var got, want bytes.Buffer
				require.NoError(t, h.encodeResult(&got, mk(), modern))
				res := mk()
				if modern {
					res.Meta = sdk.Meta{metaServerInfo: h.impl}
				}
				require.NoError(t, encodeJSON(&want, res))
				require.Equal(t, want.String(), got.String(), "text %q", text)
			}
		}
	}
}

// A session's call the endpoint answers ends when its session does, as the
// SDK's calls do.
func TestSessionCallCancelledWhenTheSessionEnds(t *testing.T) {
	f := newFixture(t)
	id := f.session(t, "emp", "2025-11-25")
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"}
	before := f.ep.callsServed.Load()
	done := make(chan reply, 1)
	go func() { done <- f.rpc(t, "emp", hdr, callMsg("1", "agent_status", `{"text":"block"}`, "")) }()
	require.Eventually(t, func() bool {
		b, _ := f.ep.sessions.get(id)
		b.calls.mu.Lock()
		defer b.calls.mu.Unlock()
		return len(b.calls.m) == 1
	}, 5*time.Second, 10*time.Millisecond, "the call is in flight")
	req, _ := http.NewRequest(http.MethodDelete, f.url, nil)
	req.Header.Set("Authorization", "Bearer emp")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	start := time.Now()
	select {
	case <-done:
		require.Less(t, time.Since(start), 5*time.Second, "cancelled, not timed out")
	case <-time.After(8 * time.Second):
		t.Fatal("the call outlived its session")
	}
	require.Equal(t, before+1, f.ep.callsServed.Load(), "answered by the endpoint")
}

// FuzzCallAnsweredAsTheSDK sends the same tools/call to an endpoint that
// answers plain calls itself and to one that sends every call through the
// SDK (Options.CallsThroughSDK): whenever the first answers, its answer
// (status, content type, bytes) must be the second's.
func FuzzCallAnsweredAsTheSDK(f *testing.F) {
	for _, s := range [][2]string{{"agent_status", `{"text":"hi"}`}, {"agent_status", `{"text":"<&>\u2028é"}`}, {"plain_write", `{}`},
		{"agent_status", `[1]`}, {"nope", `{}`}, {"agent_status", `{"text":"fail"}`}, {"agent_status", `{"text":"refuse"}`},
		{"github_issue", `{}`}, {"agent_status", `null`}, {"agent_status", `{"text":5}`}, {"old_status", `{"text":"x"}`}} {
		f.Add(s[0], []byte(s[1]), "1", false)
		f.Add(s[0], []byte(s[1]), `"a-1"`, true)
	}
	fx := newFixture(f)
	fast := fx.ep
	slow := New(fast.reg, fast.subjects, fixtureRecorder{fx}, fx.hub, Options{PageSize: 3, MaxBodyBytes: 64 << 10, CallsThroughSDK: true})
	p := fx.tokens["emp"]
	post := func(ep *Handler, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
		ctx, cancel := context.WithTimeout(identity.WithPrincipal(context.Background(), p), 2*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/t/acme/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer emp") // what the SDK's token bridge needs; the principal is p
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		ep.ServeTenant(rec, req, "acme")
		return rec
	}
	open := func(ep *Handler) map[string]string {
		init := post(ep, []byte(fmt.Sprintf(initBody, "2025-11-25")), nil)
		hdr := map[string]string{"Mcp-Session-Id": init.Header().Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
		if hdr["Mcp-Session-Id"] == "" {
			f.Fatalf("no legacy session: %d %s", init.Code, init.Body)
		}
		post(ep, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), hdr)
		return hdr
	}
	fastSession, slowSession := open(fast), open(slow)
	f.Fuzz(func(t *testing.T, name string, args []byte, id string, legacy bool) {
		if bytes.Contains(args, []byte("block")) || !json.Valid([]byte(id)) {
			return
		}
		n, _ := json.Marshal(name)
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":` + string(n) + `,"arguments":` + string(args)
		fh, sh := fastSession, slowSession
		if legacy {
			body += `}}`
		} else {
			body += `,` + modernMeta + `}}`
			fh = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
			sh = fh
		}
		before := fast.callsServed.Load()
		got := post(fast, []byte(body), fh)
		if fast.callsServed.Load() == before {
			if name == "agent_status" && string(args) == `{"text":"hi"}` {
				t.Fatal("a plain call was not answered by the endpoint")
			}
			return // the SDK answered both
		}
		want := post(slow, []byte(body), sh)
		if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || got.Body.String() != want.Body.String() {
			t.Fatalf("for %s\nendpoint: %d %s %q\nSDK:      %d %s %q", body, got.Code, got.Header().Get("Content-Type"), got.Body,
				want.Code, want.Header().Get("Content-Type"), want.Body)
		}
	})
}
