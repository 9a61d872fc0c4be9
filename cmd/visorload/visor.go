package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const version = "2026-07-28"

// meta is the 2026-07-28 _meta every request carries.
const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"visorload","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// visor is the Visor deployment under load.
type visor struct {
	c      config
	api    string // {base}/api/v1/tenants/{tenant}
	client *http.Client
	keys   []string
	agents []string // ids of the employees this run created
	tools  []json.RawMessage
	flips  atomic.Int64
}

func newVisor(c config) *visor {
	base, rest, _ := strings.Cut(c.url, "/t/")
	tenant, _, _ := strings.Cut(rest, "/")
	return &visor{c: c, api: base + "/api/v1/tenants/" + tenant, keys: c.keys,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * c.clients}, Timeout: time.Minute}}
}

// setup creates the employees and their keys (unless keys were given) and
// reads the tool list the first principal sees.
func (v *visor) setup(ctx context.Context) error {
	if len(v.keys) == 0 {
		run := time.Now().UTC().Format("0102-150405")
		for i := range v.c.agents {
			var a struct{ ID string }
			if err := v.admin(ctx, http.MethodPost, "/agents", map[string]any{"name": fmt.Sprintf("load-%s-%d", run, i)}, &a); err != nil {
				return fmt.Errorf("create employee: %w", err)
			}
			v.agents = append(v.agents, a.ID)
			var k struct{ Token string }
			if err := v.admin(ctx, http.MethodPost, "/keys", map[string]any{"kind": "agent", "agent": a.ID, "name": "visorload"}, &k); err != nil {
				return fmt.Errorf("create key: %w", err)
			}
			v.keys = append(v.keys, k.Token)
		}
	}
	if len(v.keys) == 0 {
		return fmt.Errorf("no principals: -agents is 0 and no -keys")
	}
	cursor := ""
	for {
		params := meta
		if cursor != "" {
			params = fmt.Sprintf(`"cursor":%q,%s`, cursor, meta)
		}
		body, err := v.mcp(ctx, v.keys[0], "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+params+`}}`)
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		var res struct {
			Result struct {
				Tools      []json.RawMessage
				NextCursor string
			}
		}
		if err := json.Unmarshal(body, &res); err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		v.tools = append(v.tools, res.Result.Tools...)
		if cursor = res.Result.NextCursor; cursor == "" {
			return nil
		}
	}
}

// cleanup moves the employees this run created to the trash.
func (v *visor) cleanup() {
	for _, id := range v.agents {
		_ = v.admin(context.Background(), http.MethodPost, "/agents/"+id+"/trash", nil, nil)
	}
}

// op runs one request of kind, as a random principal.
func (v *visor) op(ctx context.Context, kind string) error {
	key := v.keys[rand.IntN(len(v.keys))]
	switch kind {
	case "list":
		_, err := v.mcp(ctx, key, "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`)
		return err
	case "call":
		_, err := v.mcp(ctx, key, "tools/call", v.c.callTool, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`,
			v.c.callTool, v.c.callArgs, meta))
		return err
	default: // settings: alternate one employee's denied tools, changing its visible set
		if len(v.agents) == 0 {
			return fmt.Errorf("settings changes need employees this run created")
		}
		denied := []string{}
		if v.flips.Add(1)%2 == 0 {
			denied = []string{"visorload_no_such_tool"}
		}
		id := v.agents[rand.IntN(len(v.agents))]
		return v.admin(ctx, http.MethodPut, "/agents/"+id+"/settings",
			map[string]any{"settings": map[string]any{"capabilities": map[string]any{"denied_tools": denied}}}, nil)
	}
}

// mcp posts one 2026-07-28 request and returns the JSON-RPC response; a
// JSON-RPC error or an isError result is an error.
func (v *visor) mcp(ctx context.Context, key, method, name, body string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.c.url, strings.NewReader(body))
	setMCPHeaders(req, method, name)
	req.Header.Set("Authorization", "Bearer "+key)
	return rpc(v.client, req)
}

func setMCPHeaders(req *http.Request, method, name string) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
}

func rpc(client *http.Client, req *http.Request) ([]byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, data)
	}
	if d, ok := bytes.CutPrefix(data, []byte("event: message\ndata: ")); ok {
		data = bytes.TrimSpace(d)
	}
	if bytes.Contains(data, []byte(`"error":{`)) || bytes.Contains(data, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("%.200s", data)
	}
	return data, nil
}

func (v *visor) admin(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, v.api+path, body)
	req.Header.Set("Authorization", "Bearer "+v.c.operatorKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: status %d: %.200s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// listens are held subscriptions/listen streams.
type listens struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	acked    atomic.Int64
	changes  atomic.Int64
	failures atomic.Int64
}

// openListens opens n listen streams, spread over the principals, and
// waits (up to ten seconds) for their acknowledgments.
func (v *visor) openListens(ctx context.Context, n int) *listens {
	ctx, cancel := context.WithCancel(ctx)
	l := &listens{cancel: cancel}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 1}}
	for i := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, i+1, meta)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.c.url, strings.NewReader(body))
			setMCPHeaders(req, "subscriptions/listen", "")
			req.Header.Set("Authorization", "Bearer "+v.keys[i%len(v.keys)])
			resp, err := client.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				l.failures.Add(1)
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				switch line := sc.Text(); {
				case strings.Contains(line, "notifications/subscriptions/acknowledged"):
					l.acked.Add(1)
				case strings.Contains(line, "notifications/tools/list_changed"):
					l.changes.Add(1)
				}
			}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && l.acked.Load()+l.failures.Load() < int64(n); {
		time.Sleep(20 * time.Millisecond)
	}
	return l
}

func (l *listens) open() int64     { return l.acked.Load() }
func (l *listens) notified() int64 { return l.changes.Load() }
func (l *listens) close()          { l.cancel(); l.wg.Wait() }
