package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
)

// FuzzEndpointBody feeds arbitrary bodies and protocol versions to the
// endpoint: it must never panic or answer 5xx.
func FuzzEndpointBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"!!"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_status","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":null,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{`, ``, `null`,
	} {
		f.Add([]byte(s), "2026-07-28")
		f.Add([]byte(s), "")
	}
	tenant := identity.Tenant{ID: uuid.New(), Slug: "acme"}
	reg := tools.NewRegistry()
	reg.Register(tools.Tool{Name: "agent_status", Description: "x", Scope: identity.ScopeToolsRead, Handler: echoTool,
		Params: []tools.Param{{Name: "text", Type: "string", Description: "t"}}})
	ep := New(reg, tools.NewSubjects(&dir{tenant: tenant}, tools.NoGrants{}, 0), &audit.Memory{}, live.NoStreams{}, Options{})
	p := identity.Principal{TenantID: tenant.ID, TenantSlug: "acme", Kind: identity.KindOperator, CredentialID: "k", Scopes: []string{identity.ScopeToolsAdmin}}
	f.Fuzz(func(t *testing.T, body []byte, version string) {
		ctx, cancel := context.WithTimeout(identity.WithPrincipal(context.Background(), p), 200*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/t/acme/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer x")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		rec := httptest.NewRecorder()
		ep.ServeTenant(rec, req, "acme")
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}

// FuzzToolCall feeds well-formed tools/call requests with arbitrary tool
// names and arguments, in the 2026-07-28 era and in a legacy session: the
// answer is always a JSON-RPC message (a result or an error), never a 5xx
// or a panic.
func FuzzToolCall(f *testing.F) {
	for _, s := range [][2]string{{"agent_status", `{"text":"hi"}`}, {"set_budget", `{"n":1e300}`}, {"set_budget", `{"n":12}`},
		{"agent_status", `[1]`}, {"nope", `{}`}, {"agent_status", `{"text":"\u0000"}`}, {"set_budget", `{"n":"12"}`}, {"", `null`}} {
		f.Add(s[0], []byte(s[1]), false)
		f.Add(s[0], []byte(s[1]), true)
	}
	tenant := identity.Tenant{ID: uuid.New(), Slug: "acme"}
	reg := tools.NewRegistry()
	reg.Register(tools.Tool{Name: "agent_status", Description: "x", Scope: identity.ScopeToolsRead, Handler: echoTool,
		Params: []tools.Param{{Name: "text", Type: "string", Description: "t"}}})
	reg.Register(tools.Tool{Name: "set_budget", Description: "x", Scope: identity.ScopeToolsRead, Handler: echoTool,
		Params: []tools.Param{{Name: "n", Type: "integer", Description: "n"}}})
	ep := New(reg, tools.NewSubjects(&dir{tenant: tenant}, tools.NoGrants{}, 0), &audit.Memory{}, live.NoStreams{}, Options{})
	p := identity.Principal{TenantID: tenant.ID, TenantSlug: "acme", Kind: identity.KindOperator, CredentialID: "k", Scopes: []string{identity.ScopeToolsAdmin}}
	post := func(body []byte, hdr map[string]string) *httptest.ResponseRecorder {
		ctx, cancel := context.WithTimeout(identity.WithPrincipal(context.Background(), p), 2*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/t/acme/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer x")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		ep.ServeTenant(rec, req, "acme")
		return rec
	}
	init := post([]byte(fmt.Sprintf(initBody, "2025-11-25")), nil)
	session := init.Header().Get("Mcp-Session-Id")
	if session == "" {
		f.Fatalf("no legacy session: %d %s", init.Code, init.Body)
	}
	post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
	f.Fuzz(func(t *testing.T, name string, args []byte, legacy bool) {
		n, _ := json.Marshal(name)
		var body []byte
		hdr := map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
		if legacy {
			body = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + string(n) + `,"arguments":` + string(args) + `}}`)
		} else {
			body = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + string(n) + `,"arguments":` + string(args) + `,` + modernMeta + `}}`)
			hdr = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
		}
		rec := post(body, hdr)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %s: %s", rec.Code, body, rec.Body)
		}
	})
}
