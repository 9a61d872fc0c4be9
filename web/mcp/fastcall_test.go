package mcp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
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
