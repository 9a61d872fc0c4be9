package mcp

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/validtext"
)

// TestCallWithTextPostgresRefusesIsInvalidParams: a tools/call whose name
// or arguments hold a NUL or invalid UTF-8 is JSON-RPC -32602 in every era,
// never reaches a tool, and is audited with a storable tool name.
func TestCallWithTextPostgresRefusesIsInvalidParams(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sid := f.session(t, "op", "2025-06-18")
	legacy := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	for name, params := range map[string]string{
		"NUL in the name":           `{"name":"agent_status\u0000","arguments":{}}`,
		"NUL in an argument":        `{"name":"agent_status","arguments":{"text":"a\u0000b"}}`,
		"NUL in an argument name":   `{"name":"agent_status","arguments":{"te\u0000xt":"a"}}`,
		"invalid UTF-8 in the name": "{\"name\":\"agent_\xff\",\"arguments\":{}}",
		"invalid UTF-8 in an arg":   "{\"name\":\"agent_status\",\"arguments\":{\"text\":\"\xc3(\"}}",
		"unpaired surrogate":        `{"name":"agent_status","arguments":{"text":"\ud800"}}`,
	} {
		for era, hdr := range map[string]map[string]string{"legacy": legacy, "2026-07-28": modernHeaders("tools/call", "")} {
			t.Run(name+"/"+era, func(t *testing.T) {
				before := len(f.audit.Entries())
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":%s}`, params)
				if era != "legacy" {
					body = fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":%s}`, params[:len(params)-1]+","+modernMeta+"}")
				}
				r := f.rpc(t, "op", hdr, body)
				require.Equal(t, http.StatusOK, r.status, r.body)
				e := r.rpcErr(t)
				require.EqualValues(t, -32602, e["code"], r.body)
				require.Contains(t, e["message"], "UTF-8 text without NUL")
				require.EqualValues(t, 7, r.msgs[0]["id"])

				rows := f.audit.Entries()
				require.Len(t, rows, before+1)
				row := rows[len(rows)-1]
				require.Equal(t, audit.OutcomeRefused, row.Outcome)
				require.Equal(t, tools.EventInvalidText, row.Event)
				require.EqualValues(t, -32602, row.Code)
				require.NoError(t, validtext.String(row.Tool), "the audited name is storable: %q", row.Tool)
			})
		}
	}
	// A notification with bad text has no id to answer: HTTP 400.
	r := f.rpc(t, "op", legacy, `{"jsonrpc":"2.0","method":"notifications/x\u0000"}`)
	require.Equal(t, http.StatusBadRequest, r.status, r.body)
}
