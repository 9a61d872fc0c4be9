// Package upstream speaks MCP to tenants' upstream servers for
// services/upstreams: Remote reaches them over Streamable HTTP or the
// older HTTP+SSE with the official Go SDK's client, every connection
// through the outbound guard (egress); Stdio reaches stdio servers over the
// worker plane, on workers that run them in containers (docker/mcpstdio).
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// maxResponseBytes caps one HTTP response body that is not a stream; an
// event of a stream is capped by the SDK's MaxEventSize.
const maxResponseBytes = 16 << 20

// Remote connects to remote servers. It implements upstreams.Connector.
type Remote struct {
	http    *http.Client
	version string
	log     *slog.Logger
}

var _ upstreams.Connector = (*Remote)(nil)

// NewRemote returns a Remote whose connections go through guard (an
// egress client; its dev hosts may be plain http on private addresses).
// version is Visor's, sent as the client's implementation version.
func NewRemote(guard *egress.Client, version string, log *slog.Logger) *Remote {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Remote{http: guard.Streaming(), version: version, log: log}
}

// Connect opens and initializes a session with t's server.
func (r *Remote) Connect(ctx context.Context, t upstreams.Target) (upstreams.Session, error) {
	hc := &http.Client{Transport: &authorized{base: r.http.Transport, headers: t.Headers, token: t.Token}, CheckRedirect: r.http.CheckRedirect}
	var tr sdk.Transport
	switch t.Server.Transport {
	case upstreams.StreamableHTTP:
		tr = &sdk.StreamableClientTransport{Endpoint: t.Server.URL, HTTPClient: hc, MaxRetries: 2}
	case upstreams.SSE:
		tr = &sdk.SSEClientTransport{Endpoint: t.Server.URL, HTTPClient: hc}
	default:
		return nil, fault.New(fault.Invalid, "%s is not a remote transport", t.Server.Transport)
	}
	opts := &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}
	if t.ToolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *sdk.ToolListChangedRequest) { t.ToolsChanged() }
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "visor", Version: r.version}, opts)
	// The session's streams live until Close, past ctx, which bounds only
	// the connecting; if ctx ends first the streams end with it.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	cs, err := c.Connect(ctx, detached{Transport: tr, ctx: sctx}, nil)
	if !stop() && err == nil {
		_ = cs.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, connectError(err)
	}
	return &Session{cs: cs, cancel: cancel}, nil
}

// detached connects its transport with the session's context rather than
// the caller's, so a stream opened while connecting (HTTP+SSE's GET)
// outlives the call that opened the session.
type detached struct {
	sdk.Transport
	ctx context.Context
}

func (d detached) Connect(context.Context) (sdk.Connection, error) { return d.Transport.Connect(d.ctx) }

// connectError says why a connection failed without echoing a URL's
// secrets: a refused destination is Forbidden, anything else Unavailable.
func connectError(err error) error {
	if fault.Is(err, fault.Forbidden) {
		return fault.Newf(fault.Forbidden, err, "the outbound guard refused the destination: %s", fault.Message(err))
	}
	return fault.Newf(fault.Unavailable, err, "%s", err.Error())
}

// authorized adds a server's static headers and its bearer token to every
// request, and caps response bodies that are not event streams.
type authorized struct {
	base    http.RoundTripper
	headers map[string]string
	token   func(context.Context) (string, error)
}

func (a *authorized) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range a.headers {
		req.Header.Set(k, v)
	}
	if a.token != nil {
		tok, err := a.token(req.Context())
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := a.base.RoundTrip(req)
	if err != nil || res.Header.Get("Content-Type") == "text/event-stream" {
		return res, err
	}
	res.Body = &capped{r: res.Body, left: maxResponseBytes}
	return res, nil
}

// capped fails a body read past its cap.
type capped struct {
	r    io.ReadCloser
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fault.New(fault.TooLarge, "the server's response is larger than %d bytes", maxResponseBytes)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.r.Close() }

// Session is one initialized session with a server.
type Session struct {
	cs     *sdk.ClientSession
	cancel context.CancelFunc
}

// Tools lists the server's tools, following pages, at most max.
func (s *Session) Tools(ctx context.Context, max int) ([]upstreams.Tool, error) {
	var out []upstreams.Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, callError(err)
		}
		if len(out) == max {
			break
		}
		tool := upstreams.Tool{Name: t.Name, Title: t.Title, Description: t.Description}
		var err error
		if tool.InputSchema, err = rawJSON(t.InputSchema); err != nil {
			return nil, err
		}
		if tool.OutputSchema, err = rawJSON(t.OutputSchema); err != nil {
			return nil, err
		}
		if t.Annotations != nil {
			if tool.Annotations, err = rawJSON(t.Annotations); err != nil {
				return nil, err
			}
		}
		out = append(out, tool)
	}
	return out, nil
}

// Call calls one tool.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (upstreams.Result, error) {
	res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return upstreams.Result{}, callError(err)
	}
	content := res.Content
	if content == nil {
		content = []sdk.Content{}
	}
	out := upstreams.Result{IsError: res.IsError}
	if out.Content, err = json.Marshal(content); err != nil {
		return upstreams.Result{}, err
	}
	if out.Structured, err = rawJSON(res.StructuredContent); err != nil {
		return upstreams.Result{}, err
	}
	return out, nil
}

// Close ends the session.
func (s *Session) Close() error {
	err := s.cs.Close()
	s.cancel()
	return err
}

// callError makes the server's JSON-RPC error answer Invalid (the call was
// refused, the session is fine) and anything else Unavailable.
func callError(err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return fault.Newf(fault.Invalid, err, "the server refused the request (%d): %s", rpc.Code, rpc.Message)
	}
	if fault.CodeOf(err) != fault.Internal {
		return err
	}
	return fault.Newf(fault.Unavailable, err, "%s", err.Error())
}

// rawJSON marshals v, nil for nil.
func rawJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}
