package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bare is a go-sdk server holding the same tools (names, descriptions,
// input schemas) with no auth, no policy and no audit; each tool answers a
// fixed text.
type bare struct {
	url    string
	srv    *http.Server
	client *http.Client
}

func startBare(listed []json.RawMessage, timeout time.Duration) (*bare, error) {
	s := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil)
	for _, raw := range listed {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("listed tool: %w", err)
		}
		s.AddTool(&sdk.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
			})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	b := &bare{url: "http://" + ln.Addr().String() + "/mcp", srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: timeout}}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

func (b *bare) close() { _ = b.srv.Close() }

// op sends the same list and call requests as the Visor run.
func (b *bare) op(tool, args string) func(context.Context, string) error {
	return func(ctx context.Context, kind string) error {
		var body, method, name string
		if kind == "call" {
			method, name = "tools/call", tool
			body = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, tool, args, meta)
		} else {
			method = "tools/list"
			body = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url, strings.NewReader(body))
		setMCPHeaders(req, method, name)
		_, err := rpc(b.client, req)
		return err
	}
}
