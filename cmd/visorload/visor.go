package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/visorhq/visor/web/mcp"
)

const version = mcp.Stateless

// meta is the 2026-07-28 _meta every request carries.
const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientInfo":{"name":"visorload","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// visor is the Visor deployment under load.
type visor struct {
	c      config
	api    string // {base}/api/v1/tenants/{tenant}
	client *http.Client
	keys   []string
	agents []string // ids of the employees this run created
	tools  []json.RawMessage
	// deny is the listed tool a settings change denies and allows in turn
	// (not the called one), so every change alters the employee's visible
	// set and notifies its listen streams.
	deny   string
	denied []atomic.Bool // by agent: deny is denied now
}

func newVisor(c config) *visor {
	base, rest, _ := strings.Cut(c.url, "/t/")
	tenant, _, _ := strings.Cut(rest, "/")
	return &visor{c: c, api: base + "/api/v1/tenants/" + tenant, keys: c.keys,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * c.clients}, Timeout: c.timeout}}
}

// setupConcurrency bounds the requests setup sends at once: creating a key
// and a key's first use each cost the server an argon2id hash, which is
// deliberately expensive; sending them all at once only makes them queue
// for the CPU together.
const setupConcurrency = 4

// create makes the employees and their keys, a few at a time.
func (v *visor) create(ctx context.Context) error {
	run := time.Now().UTC().Format("0102-150405")
	v.agents = make([]string, v.c.agents)
	v.keys = make([]string, v.c.agents)
	return parallel(v.c.agents, setupConcurrency, func(i int) error {
		var a struct{ ID string }
		if err := v.admin(ctx, http.MethodPost, "/agents", map[string]any{"name": fmt.Sprintf("load-%s-%d", run, i)}, &a); err != nil {
			return fmt.Errorf("create employee: %w", err)
		}
		v.agents[i] = a.ID
		var k struct{ Token string }
		if err := v.admin(ctx, http.MethodPost, "/keys", map[string]any{"kind": "agent", "agent": a.ID, "name": "visorload"}, &k); err != nil {
			return fmt.Errorf("create key: %w", err)
		}
		v.keys[i] = k.Token
		return nil
	})
}

// warm sends one tools/list as every principal, a few at a time, before
// the measured window: a replica verifies a key's secret (argon2id) on its
// first use, which is not what a steady stream of requests pays.
func (v *visor) warm(ctx context.Context) error {
	return parallel(len(v.keys), setupConcurrency, func(i int) error {
		if _, err := v.mcp(ctx, v.keys[i], "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`); err != nil {
			return fmt.Errorf("first list as principal %d: %w", i+1, err)
		}
		return nil
	})
}

// parallel runs fn(0..n-1), at most limit at once, and returns the first
// error.
func parallel(n, limit int, fn func(int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// listTools reads the tools the first principal sees and picks the one
// settings changes toggle.
func (v *visor) listTools(ctx context.Context) error {
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
			break
		}
	}
	for _, raw := range v.tools {
		var t struct{ Name string }
		if json.Unmarshal(raw, &t) == nil && t.Name != v.c.callTool && v.deny == "" {
			v.deny = t.Name
		}
	}
	if v.deny == "" && v.c.mix["settings"] > 0 {
		return fmt.Errorf("settings changes need a listed tool other than %q to deny", v.c.callTool)
	}
	v.denied = make([]atomic.Bool, len(v.agents))
	return nil
}

// cleanup moves the employees this run created to the trash.
func (v *visor) cleanup() {
	for _, id := range v.agents {
		if id == "" {
			continue
		}
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
	default: // settings: deny or allow v.deny for one employee, changing its visible set
		if len(v.agents) == 0 {
			return fmt.Errorf("settings changes need employees this run created")
		}
		i := rand.IntN(len(v.agents))
		denied := []string{}
		if !v.denied[i].Load() {
			denied = []string{v.deny}
		}
		v.denied[i].Store(len(denied) > 0)
		return v.admin(ctx, http.MethodPut, "/agents/"+v.agents[i]+"/settings",
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
	closing  atomic.Bool
	wg       sync.WaitGroup
	acked    atomic.Int64
	changes  atomic.Int64
	failures atomic.Int64 // refused, or ended before the acknowledgment
	ended    atomic.Int64 // acknowledged, then ended by the server during the run
	mu       sync.Mutex
	sample   error
}

// openListens opens n listen streams, spread over the principals, and
// waits for each to be acknowledged or to fail (each bounded by the
// request timeout).
func (v *visor) openListens(ctx context.Context, n int) *listens {
	ctx, cancel := context.WithCancel(ctx)
	l := &listens{cancel: cancel}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 1}}
	for i := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			acked := false
			err := v.listen(ctx, client, i, func(line string) {
				switch {
				case !acked && strings.Contains(line, "notifications/subscriptions/acknowledged"):
					acked = true
					l.acked.Add(1)
				case strings.Contains(line, "notifications/tools/list_changed"):
					l.changes.Add(1)
				}
			})
			switch {
			case l.closing.Load():
			case !acked:
				l.failures.Add(1)
				l.fail(err)
			default:
				l.ended.Add(1)
				l.fail(err)
			}
		}()
	}
	deadline := time.Now().Add(v.c.timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil && l.acked.Load()+l.failures.Load() < int64(n) {
		time.Sleep(20 * time.Millisecond)
	}
	return l
}

// listen holds listen stream i until it ends, passing each line to fn.
func (v *visor) listen(ctx context.Context, client *http.Client, i int, fn func(string)) error {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, i+1, meta)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.c.url, strings.NewReader(body))
	setMCPHeaders(req, "subscriptions/listen", "")
	req.Header.Set("Authorization", "Bearer "+v.keys[i%len(v.keys)])
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("listen: status %d: %.200s", resp.StatusCode, data)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		fn(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("listen: the server ended the stream")
}

func (l *listens) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sample == nil {
		l.sample = err
	}
}

func (l *listens) open() int64     { return l.acked.Load() }
func (l *listens) notified() int64 { return l.changes.Load() }
func (l *listens) close()          { l.closing.Store(true); l.cancel(); l.wg.Wait() }
