// Package e2e runs real `visor serve` processes against Postgres and Redis
// and checks what a user of several replicas would notice.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// visorBin is the binary TestMain builds once.
var visorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "visor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	visorBin = filepath.Join(dir, "visor")
	args := []string{"build", "-o", visorBin}
	if os.Getenv("VISOR_E2E_RACE") == "1" {
		args = append(args, "-race") // replicas then fail their test on a data race
	}
	build := exec.Command("go", append(args, "github.com/visorhq/visor/cmd/visor")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build visor:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// replica is one running `visor serve`.
type replica struct {
	name string
	base string
	cmd  *exec.Cmd
	log  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startReplica runs `visor serve` on dbURL and redisURL until the test ends.
func startReplica(t testing.TB, name, dbURL, redisURL string, env ...string) *replica {
	t.Helper()
	return startReplicaAt(t, "127.0.0.1", name, dbURL, redisURL, env...)
}

// startReplicaAt is startReplica with the base URL naming host (which
// must resolve to 127.0.0.1, where the replica listens): a browser keeps
// one host's cookies apart from another's.
func startReplicaAt(t testing.TB, host, name, dbURL, redisURL string, env ...string) *replica {
	t.Helper()
	port := freePort(t)
	r := &replica{name: name, base: fmt.Sprintf("http://%s:%d", host, port), log: &syncBuffer{}}
	r.cmd = exec.Command(visorBin, "serve")
	r.cmd.Env = append(os.Environ(),
		"VISOR_DATABASE_URL="+dbURL, "VISOR_REDIS_URL="+redisURL,
		fmt.Sprintf("VISOR_HTTP_ADDR=127.0.0.1:%d", port), "VISOR_BASE_URL="+r.base,
		"VISOR_LOG_FORMAT=text", "VISOR_LOG_LEVEL=warn", "VISOR_SHUTDOWN_TIMEOUT=2s")
	r.cmd.Env = append(r.cmd.Env, env...)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	require.NoError(t, r.cmd.Start())
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = r.cmd.Process.Kill()
			<-done
		}
		if strings.Contains(r.log.String(), "WARNING: DATA RACE") {
			t.Errorf("replica %s reported a data race", r.name)
		}
		if t.Failed() {
			t.Logf("--- replica %s log:\n%s", r.name, r.log.String())
		}
	})
	testsignal.Until(t, 20*time.Second, 50*time.Millisecond, "replica "+name+" healthy", func() bool {
		resp, err := http.Get(r.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if r.cmd.ProcessState != nil {
			t.Fatalf("replica %s exited before it became healthy: %v\n%s", name, err, r.log.String())
		}
		return false
	})
	return r
}

// world is two tenants set up directly through the identity service: acme
// with agents ada and bob, globex with agent gil, and a key for each.
type world struct {
	dbURL  string
	db     *postgres.DB
	ids    *identity.Service
	acme   identity.Tenant
	globex identity.Tenant
	ada    identity.Agent
	bob    identity.Agent
	gil    identity.Agent
	// Tokens.
	operator, adaKey, bobKey, gilKey string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{dbURL: pgtest.NewURL(t)}
	ctx := context.Background()
	var err error
	w.db, err = postgres.Open(ctx, w.dbURL)
	require.NoError(t, err)
	t.Cleanup(w.db.Close)
	w.ids = identity.NewService(postgres.NewIdentityStore(w.db), changes.Discard{}, discardLogger())
	w.acme, err = w.ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	w.globex, err = w.ids.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	w.ada = w.agent(t, w.acme, "ada", identity.AgentSettings{})
	w.bob = w.agent(t, w.acme, "bob", identity.AgentSettings{})
	w.gil = w.agent(t, w.globex, "gil", identity.AgentSettings{})
	w.operator = w.key(t, w.acme, identity.NewKey{Kind: identity.KeyOperator, Name: "ops",
		Scopes: []string{identity.ScopeAdminWrite, identity.ScopeToolsAdmin}})
	w.adaKey = w.agentKey(t, w.acme, w.ada)
	w.bobKey = w.agentKey(t, w.acme, w.bob)
	w.gilKey = w.agentKey(t, w.globex, w.gil)
	return w
}

func (w *world) agent(t testing.TB, tn identity.Tenant, name string, s identity.AgentSettings) identity.Agent {
	t.Helper()
	a, err := w.ids.CreateAgent(context.Background(), tn.ID, identity.NewAgent{Name: name, Settings: s})
	require.NoError(t, err)
	return a
}

func (w *world) key(t testing.TB, tn identity.Tenant, k identity.NewKey) string {
	t.Helper()
	_, token, err := w.ids.CreateKey(context.Background(), tn.ID, k)
	require.NoError(t, err)
	return token
}

func (w *world) agentKey(t testing.TB, tn identity.Tenant, a identity.Agent) string {
	return w.key(t, tn, identity.NewKey{Kind: identity.KeyAgent, AgentID: a.ID, Name: a.Name,
		Scopes: []string{identity.ScopeToolsWrite}})
}

// api calls the admin API of r as the acme operator and decodes the answer
// into out (when non-nil). It fails the test on a non-2xx status.
func (w *world) api(t testing.TB, r *replica, method, path string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		require.NoError(t, err)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.base+"/api/v1"+path, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+w.operator)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Truef(t, resp.StatusCode/100 == 2, "%s %s: %d %s", method, path, resp.StatusCode, raw)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out))
	}
}

// setDenied replaces an agent's denied_tools through replica r's admin API.
func (w *world) setDenied(t testing.TB, r *replica, a identity.Agent, denied ...string) {
	t.Helper()
	s := identity.AgentSettings{Capabilities: identity.Capabilities{DeniedTools: denied}}
	w.api(t, r, http.MethodPut, "/tenants/acme/agents/"+a.ID.String()+"/settings", map[string]any{"settings": s}, nil)
}

// --- MCP over raw HTTP ----------------------------------------------------

const (
	legacyVersion = "2025-06-18"
	modernVersion = "2026-07-28"
)

// rpcMessage is one JSON-RPC message read from a response or a stream.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	// At is when the message was read.
	At time.Time `json:"-"`
}

// listener is an open notification stream; Changed receives one value per
// notifications/tools/list_changed.
type listener struct {
	Changed chan rpcMessage
	Ack     rpcMessage // a listen stream's acknowledgment
	// Done is closed when the server ends the stream (or Close does).
	Done   chan struct{}
	cancel context.CancelFunc
}

// Close ends the stream.
func (l *listener) Close() { l.cancel() }

// readSSE sends every JSON-RPC message of an SSE body to fn until it ends.
func readSSE(body io.Reader, fn func(rpcMessage)) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimSpace(strings.TrimPrefix(line, "data:")))
		case line == "" && data.Len() > 0:
			m := rpcMessage{At: time.Now()}
			if json.Unmarshal([]byte(data.String()), &m) == nil {
				fn(m)
			}
			data.Reset()
		}
	}
}

// mcpPost sends one JSON-RPC message and returns the response (read from
// JSON or from the first message of an SSE body) and the session id header.
func mcpPost(t testing.TB, r *replica, token, version, session string, msg map[string]any) (rpcMessage, string) {
	t.Helper()
	resp := mcpSend(t, r, token, version, session, msg)
	defer resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode == http.StatusAccepted {
		return rpcMessage{}, sid
	}
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST %v", msg["method"])
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var out rpcMessage
		found := false
		readSSE(resp.Body, func(m rpcMessage) {
			if !found && m.ID != nil {
				out, found = m, true
			}
		})
		require.True(t, found, "no response on the stream")
		return out, sid
	}
	var out rpcMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out, sid
}

func mcpSend(t testing.TB, r *replica, token, version, session string, msg map[string]any) *http.Response {
	t.Helper()
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, r.base+"/t/"+tenantOf(token)+"/mcp", bytes.NewReader(b))
	require.NoError(t, err)
	setMCPHeaders(req, token, version, session, msg)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// tenantOf maps a key to its tenant's slug; tests register keys here.
var tenantOfKey sync.Map

func tenantOf(token string) string {
	v, ok := tenantOfKey.Load(token)
	if !ok {
		return "acme"
	}
	return v.(string)
}

func setMCPHeaders(req *http.Request, token, version, session string, msg map[string]any) {
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version == modernVersion && msg != nil {
		req.Header.Set("Mcp-Method", fmt.Sprint(msg["method"]))
		if p, ok := msg["params"].(map[string]any); ok {
			if name, ok := p["name"].(string); ok {
				req.Header.Set("Mcp-Name", name)
			}
		}
	}
}

// modernMeta is the per-request _meta of 2026-07-28.
func modernMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modernVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
}

// legacySession initializes a 2025-06-18 session and returns its id.
func legacySession(t testing.TB, r *replica, token string) string {
	t.Helper()
	res, sid := mcpPost(t, r, token, "", "", map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": legacyVersion, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}}})
	require.Nil(t, res.Error)
	require.NotEmpty(t, sid)
	var init struct {
		Capabilities struct {
			Tools struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(res.Result, &init))
	require.True(t, init.Capabilities.Tools.ListChanged, "the server must declare tools.listChanged")
	mcpPost(t, r, token, legacyVersion, sid, map[string]any{"method": "notifications/initialized"})
	return sid
}

// listenLegacy opens a legacy session and its GET stream on r. It returns
// once the stream is open (the server registers it before answering).
func listenLegacy(t testing.TB, r *replica, token string) *listener {
	t.Helper()
	sid := legacySession(t, r, token)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/t/"+tenantOf(token)+"/mcp", nil)
	require.NoError(t, err)
	setMCPHeaders(req, token, legacyVersion, sid, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	l := &listener{Changed: make(chan rpcMessage, 16), Done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(l.Done)
		defer resp.Body.Close()
		readSSE(resp.Body, func(m rpcMessage) {
			if m.Method == "notifications/tools/list_changed" {
				l.Changed <- m
			}
		})
	}()
	t.Cleanup(cancel)
	return l
}

// listenModern opens a 2026-07-28 subscriptions/listen stream for
// toolsListChanged and returns after the acknowledgment arrived.
func listenModern(t testing.TB, r *replica, token string) *listener {
	t.Helper()
	return listenModernFor(t, r, token, map[string]any{"toolsListChanged": true})
}

// listenModernFor opens a listen stream opting into notifications. The
// acknowledgment must be the stream's first message.
func listenModernFor(t testing.TB, r *replica, token string, notifications map[string]any) *listener {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	msg := map[string]any{"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": map[string]any{
		"_meta": modernMeta(), "notifications": notifications}}
	b, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/t/"+tenantOf(token)+"/mcp", bytes.NewReader(b))
	require.NoError(t, err)
	setMCPHeaders(req, token, modernVersion, "", msg)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("subscriptions/listen: %d %s", resp.StatusCode, raw)
	}
	l := &listener{Changed: make(chan rpcMessage, 16), Done: make(chan struct{}), cancel: cancel}
	acked := make(chan rpcMessage, 1)
	go func() {
		defer close(l.Done)
		defer resp.Body.Close()
		first := true
		readSSE(resp.Body, func(m rpcMessage) {
			switch {
			case first && m.Method != "notifications/subscriptions/acknowledged":
				t.Errorf("the first message on a listen stream is %q, not the acknowledgment", m.Method)
			case m.Method == "notifications/subscriptions/acknowledged":
				acked <- m
			case m.Method != "":
				l.Changed <- m // any other notification must be a list_changed; tests check
			}
			first = false
		})
	}()
	select {
	case m := <-acked:
		require.Contains(t, string(m.Params), "listen-1", "the acknowledgment carries the subscription id")
		l.Ack = m
	case <-time.After(10 * time.Second):
		t.Fatal("no subscriptions/acknowledged")
	}
	t.Cleanup(cancel)
	return l
}

// toolNames lists the tools token sees on r (2026-07-28, following cursors).
func toolNames(t testing.TB, r *replica, token string) []string {
	t.Helper()
	var names []string
	cursor := ""
	for page := 0; page < 50; page++ {
		params := map[string]any{"_meta": modernMeta()}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, _ := mcpPost(t, r, token, modernVersion, "", map[string]any{"id": page + 10, "method": "tools/list", "params": params})
		require.Nil(t, res.Error, "tools/list")
		var out struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(res.Result, &out))
		for _, tl := range out.Tools {
			names = append(names, tl.Name)
		}
		if cursor = out.NextCursor; cursor == "" {
			return names
		}
	}
	t.Fatal("tools/list never ended")
	return nil
}

// expectChange waits for one list_changed on l.
func expectChange(t testing.TB, l *listener, within time.Duration, what string) rpcMessage {
	t.Helper()
	select {
	case m := <-l.Changed:
		return m
	case <-time.After(within):
		t.Fatalf("%s: no tools/list_changed within %s", what, within)
		return rpcMessage{}
	}
}

// expectQuiet checks that l receives nothing for a while.
func expectQuiet(t testing.TB, l *listener, wait time.Duration, what string) {
	t.Helper()
	select {
	case m := <-l.Changed:
		t.Fatalf("%s: unexpected message method=%q id=%s params=%s result=%s", what, m.Method, m.ID, m.Params, m.Result)
	case <-time.After(wait):
	}
}

var _ = uuid.Nil
