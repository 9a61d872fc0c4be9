package mcp

import (
	"bytes"
	"context"
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
