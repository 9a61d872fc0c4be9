package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
)

// dir is an in-memory tools.Directory.
type dir struct {
	tenant identity.Tenant
	agents map[uuid.UUID]identity.Agent
}

func (d *dir) Tenant(_ context.Context, id uuid.UUID) (identity.Tenant, error) {
	if id != d.tenant.ID {
		return identity.Tenant{}, fault.New(fault.NotFound, "tenant not found")
	}
	return d.tenant, nil
}

func (d *dir) Agent(_ context.Context, tid, id uuid.UUID) (identity.Agent, error) {
	a, ok := d.agents[id]
	if !ok || tid != d.tenant.ID {
		return identity.Agent{}, fault.New(fault.NotFound, "agent not found")
	}
	return a, nil
}

// hub records the streams the endpoint opens.
type hub struct {
	mu      sync.Mutex
	streams []live.Stream
	// opening, when set, runs inside Open after the stream is recorded, as
	// a hub's computation of the stream's first set would.
	opening func(live.Stream)
}

func (h *hub) Open(_ context.Context, s live.Stream) func() {
	h.mu.Lock()
	h.streams = append(h.streams, s)
	opening := h.opening
	h.mu.Unlock()
	if opening != nil {
		opening(s)
	}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, x := range h.streams {
			if x == s {
				h.streams = append(h.streams[:i], h.streams[i+1:]...)
				return
			}
		}
	}
}

func (h *hub) wait(t *testing.T, n int) []live.Stream {
	t.Helper()
	require.Eventually(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(h.streams) == n }, 5*time.Second, 10*time.Millisecond)
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]live.Stream(nil), h.streams...)
}

type fixture struct {
	url   string
	mount func() string // starts another replica on the same stores; returns its URL
	dir   *dir
	audit *audit.Memory
	// refuseAudit, when set, fails the audit rows it returns an error for.
	refuseAudit func(audit.Entry) error
	hub         *hub
	tokens      map[string]identity.Principal
	agent       identity.Agent
	ep          *Handler // the endpoint mounted last
	// listCache and sessionTimeout are Options.ListCacheEntries and
	// Options.SessionTimeout of endpoints mounted after they are set.
	listCache      int
	sessionTimeout time.Duration
	// streams and metrics are Options.Streams and Options.Metrics of
	// endpoints mounted after they are set.
	streams StreamLimits
	metrics *Metrics
}

func echoTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	s, _ := tools.String(c.Args, "text")
	switch s {
	case "block": // until the call is cancelled
		select {
		case <-ctx.Done():
			return nil, fault.New(fault.Conflict, "cancelled")
		case <-time.After(10 * time.Second):
			return nil, fault.New(fault.Conflict, "not cancelled")
		}
	case "fail":
		return nil, fault.New(fault.Conflict, "the text may not be fail")
	case "refuse":
		return nil, tools.Refused(tools.EventRelationshipRefused, "that record is not yours")
	}
	return &tools.Result{Text: "echo: " + s}, nil
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	tenant := identity.Tenant{ID: uuid.New(), Slug: "acme", Name: "Acme"}
	agent := identity.Agent{ID: uuid.New(), TenantID: tenant.ID, Name: "ann", Status: identity.AgentActive}
	d := &dir{tenant: tenant, agents: map[uuid.UUID]identity.Agent{agent.ID: agent}}
	reg := tools.NewRegistry()
	reg.Register(tools.Tool{Name: "agent_status", Description: "Read status.", Scope: identity.ScopeToolsRead, Handler: echoTool,
		Params: []tools.Param{{Name: "text", Type: "string", Description: "Text."}}, Annotations: tools.Annotations{ReadOnly: true}})
	reg.Register(tools.Tool{Name: "plain_write", Description: "Write.", Scope: identity.ScopeToolsWrite, Handler: echoTool,
		Params: []tools.Param{{Name: "text", Type: "string", Description: "Text.", Required: true}}})
	reg.Register(tools.Tool{Name: "github_issue", Description: "GitHub.", Scope: identity.ScopeToolsRead, Gate: tools.GateGitHub, Handler: echoTool})
	reg.Register(tools.Tool{Name: "old_status", DeprecatedFor: "agent_status"})
	for i := range 5 {
		reg.Register(tools.Tool{Name: fmt.Sprintf("zz_tool_%d", i), Description: "Filler.", Scope: identity.ScopeToolsRead, Handler: echoTool})
	}
	rec := &audit.Memory{}
	h := &hub{}
	f := &fixture{dir: d, audit: rec, hub: h, agent: agent, tokens: map[string]identity.Principal{
		"emp":      {TenantID: tenant.ID, TenantSlug: "acme", Kind: identity.KindEmployee, AgentID: agent.ID, Scopes: identity.DefaultEmployeeScopes},
		"op":       {TenantID: tenant.ID, TenantSlug: "acme", Kind: identity.KindOperator, CredentialID: "k1", Scopes: []string{identity.ScopeToolsAdmin}},
		"op2":      {TenantID: tenant.ID, TenantSlug: "acme", Kind: identity.KindOperator, CredentialID: "k2", Scopes: []string{identity.ScopeToolsAdmin}},
		"ext-read": {TenantID: tenant.ID, TenantSlug: "acme", Kind: identity.KindExternal, ClientID: "c", MemberID: uuid.New(), Scopes: []string{identity.ScopeToolsRead}},
	}}
	f.mount = func() string {
		ep := New(reg, tools.NewSubjects(d, tools.NoGrants{}, 0), fixtureRecorder{f}, h, Options{PageSize: 3, MaxBodyBytes: 64 << 10, ListCacheEntries: f.listCache,
			SessionTimeout: f.sessionTimeout, Streams: f.streams, Metrics: f.metrics})
		f.ep = ep
		e := echo.New()
		ep.Register(e, func(next echo.HandlerFunc) echo.HandlerFunc { // stands in for package auth
			return func(c echo.Context) error {
				p, ok := f.tokens[strings.TrimPrefix(c.Request().Header.Get("Authorization"), "Bearer ")]
				if !ok {
					return c.NoContent(http.StatusUnauthorized)
				}
				c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), p)))
				return next(c)
			}
		})
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		return srv.URL + "/t/acme/mcp"
	}
	f.url = f.mount()
	return f
}

// fixtureRecorder records in the fixture's memory, unless refuseAudit
// refuses the row.
type fixtureRecorder struct{ f *fixture }

func (r fixtureRecorder) Record(ctx context.Context, e audit.Entry) error {
	if r.f.refuseAudit != nil {
		if err := r.f.refuseAudit(e); err != nil {
			return err
		}
	}
	return r.f.audit.Record(ctx, e)
}

type reply struct {
	status int
	header http.Header
	msgs   []map[string]any
	body   string
}

// rpc posts one JSON-RPC message and reads JSON or SSE replies.
func (f *fixture) rpc(t *testing.T, token string, hdr map[string]string, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	r := reply{status: res.StatusCode, header: res.Header}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var raw strings.Builder
	for sc.Scan() {
		line := sc.Text()
		raw.WriteString(line + "\n")
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			data, ok = line, true
		}
		if ok && strings.HasPrefix(data, "{") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &m))
			r.msgs = append(r.msgs, m)
		}
	}
	r.body = raw.String()
	return r
}

func (r reply) result(t *testing.T) map[string]any {
	t.Helper()
	require.NotEmpty(t, r.msgs, "status %d body %s", r.status, r.body)
	last := r.msgs[len(r.msgs)-1]
	res, ok := last["result"].(map[string]any)
	require.True(t, ok, "want a result, got %v", last)
	return res
}

func (r reply) rpcErr(t *testing.T) map[string]any {
	t.Helper()
	require.NotEmpty(t, r.msgs, "status %d body %s", r.status, r.body)
	e, ok := r.msgs[len(r.msgs)-1]["error"].(map[string]any)
	require.True(t, ok, "want an error, got %v", r.msgs)
	return e
}

// refusal returns structuredContent.refusal of an isError result: how a
// listed tool's refusal is answered (code, event, message), after checking
// that the text content carries the same message.
func (r reply) refusal(t *testing.T) map[string]any {
	t.Helper()
	res := r.result(t)
	require.Equal(t, true, res["isError"], "want a refused result, got %v", res)
	sc, _ := res["structuredContent"].(map[string]any)
	ref, ok := sc["refusal"].(map[string]any)
	require.True(t, ok, "want structuredContent.refusal, got %v", res)
	require.Equal(t, ref["message"], res["content"].([]any)[0].(map[string]any)["text"])
	return ref
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// session opens a legacy session and returns its id.
func (f *fixture) session(t *testing.T, token, version string) string {
	t.Helper()
	r := f.rpc(t, token, nil, fmt.Sprintf(initBody, version))
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, version, r.result(t)["protocolVersion"])
	id := r.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	r = f.rpc(t, token, map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": version}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, r.status, r.body)
	return id
}

func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

func toolNames(res map[string]any) []string {
	var out []string
	for _, x := range res["tools"].([]any) {
		out = append(out, x.(map[string]any)["name"].(string))
	}
	return out
}
