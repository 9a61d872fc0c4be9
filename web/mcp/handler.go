// Package mcp is Visor's MCP endpoint, {base}/t/{tenant}/mcp, on the
// official go-sdk. One URL serves every protocol era (Versions): the
// session-based eras before Stateless through a stateful SDK handler, and
// Stateless and later through a stateless one, chosen per request by the
// MCP-Protocol-Version header and the request's _meta (protocol.go is the
// one place that names a version). Both share one
// *sdk.Server whose receiving middleware answers tools/list and tools/call
// from the tools registry and its one policy, and audits every call.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/web/server"
)

// Options tune the endpoint. Zero values take the defaults.
type Options struct {
	// PageSize is the number of tools per tools/list page (default 100).
	PageSize int
	// ListTTL is the cache hint on tools/list results (default 60s). It is
	// always cacheScope "private": a list is one caller's.
	ListTTL time.Duration
	// MaxBodyBytes caps a request body (default 1 MiB); larger is 413.
	MaxBodyBytes int64
	// AllowedOrigins are extra browser origins accepted besides the
	// endpoint's own host (e.g. "https://app.example.com").
	AllowedOrigins []string
	// SessionTimeout closes idle legacy sessions (default 30 minutes).
	SessionTimeout time.Duration
	// ResourceMetadata returns the RFC 9728 metadata URL for a tenant's
	// endpoint, for WWW-Authenticate on a step-up; nil derives it from the
	// request.
	ResourceMetadata func(r *http.Request, tenantSlug string) string
	// Version is the build's version, sent as serverInfo.version
	// (default "dev").
	Version string
	// ListCacheEntries bounds each level of the tools/list cache (visible
	// sets by caller and policy version; encoded pages by set); default
	// DefaultListCacheEntries. Negative turns the cache off (every list
	// runs the policy and encodes its page), for comparison.
	ListCacheEntries int
	// ListCacheBytes bounds the encoded bytes of the cached pages; default
	// DefaultListCacheBytes. The least recently used pages go first.
	ListCacheBytes int
	// CallsThroughSDK sends every tools/call through the SDK's JSON-RPC
	// layer, as before the endpoint answered plain ones itself
	// (fastcall.go), for comparison.
	CallsThroughSDK bool
	// Metrics, when set, count tool calls per tool and outcome.
	Metrics *Metrics
	// Streams bound the notification streams this replica holds.
	Streams StreamLimits
	Logger  *slog.Logger
}

// Handler serves the MCP endpoint.
type Handler struct {
	reg      *tools.Registry
	subjects *tools.Subjects
	calls    *calls.Pipeline
	streams  live.Streams
	gate     *streamGate
	opts     Options
	log      *slog.Logger

	server    *sdk.Server
	impl      *sdk.Implementation // the server's name and version, as it announces them
	legacy    http.Handler        // stateful eras, behind the token-info bridge
	modern    http.Handler        // 2026-07-28, stateless
	sessions  sessions
	listTools []*sdk.Tool // wire form of each registry tool, by registry order
	lists     *listCache
	// listsServed counts tools/list answers written by serveList rather
	// than the SDK.
	listsServed atomic.Int64
	// callsServed counts tools/call answers written by serveCall or
	// serveSessionCall rather than the SDK; callsOff turns those off.
	callsServed atomic.Int64
	callsOff    bool
	// stamp is the encoded _meta the SDK adds to every 2026-07-28
	// result: the server's identity.
	stamp []byte

	closeOnce sync.Once
	closing   chan struct{} // closed by Close: held streams end
	// life ends with Close too, cutting short writes in flight to held
	// streams, so a client that stopped reading cannot hold up a shutdown.
	life    context.Context
	endLife context.CancelFunc
}

// New returns the endpoint. streams may be live.NoStreams{}.
func New(reg *tools.Registry, subjects *tools.Subjects, rec audit.Recorder, streams live.Streams, opts Options) *Handler {
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.ListTTL <= 0 {
		opts.ListTTL = 60 * time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	h := &Handler{reg: reg, subjects: subjects, calls: calls.New(reg, subjects, rec, opts.Logger), streams: streams, opts: opts, log: opts.Logger,
		sessions: sessions{m: map[string]binding{}}, closing: make(chan struct{}),
		lists: newListCache(opts.ListCacheEntries, opts.ListCacheBytes), callsOff: opts.CallsThroughSDK,
		gate: newStreamGate(opts.Streams, opts.Metrics)}
	h.life, h.endLife = context.WithCancel(context.Background())
	for _, t := range reg.All() {
		h.listTools = append(h.listTools, h.wireTool(t))
	}
	h.impl = &sdk.Implementation{Name: "visor", Version: opts.Version}
	// HTML-escaped, as the result's own MarshalJSON escapes everything in it.
	h.stamp, _ = json.Marshal(sdk.Meta{metaServerInfo: h.impl})
	h.server = sdk.NewServer(h.impl, &sdk.ServerOptions{
		// Prompts and resources are declared (empty) because the SDK answers
		// their list methods anyway; a server must not serve what it does not
		// declare (SEP-2575).
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true},
			Prompts: &sdk.PromptCapabilities{}, Resources: &sdk.ResourceCapabilities{}},
		SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) {
			c.CacheScope, c.TTLMs = "private", int(opts.ListTTL/time.Millisecond)
		},
		Logger: opts.Logger,
	})
	h.server.AddReceivingMiddleware(h.receive)
	h.server.AddSendingMiddleware(h.send)
	bridge := sdkauth.RequireBearerToken(h.tokenInfo, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	getServer := func(*http.Request) *sdk.Server { return h.server }
	// Idle sessions are closed by the endpoint (sessions.bind), which sees
	// every request of a session; the SDK does not.
	h.legacy = bridge(sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
		MaxRequestBodyBytes: opts.MaxBodyBytes, Logger: opts.Logger}))
	h.modern = bridge(sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: opts.MaxBodyBytes, Logger: opts.Logger,
		// A client that closes its request cancels the call: a script run's
		// container is removed at once rather than running to its timeout.
		PropagateRequestCancellation: true}))
	return h
}

// Route is the endpoint's echo path. Its handler checks its own bodies for
// text that cannot be stored (refuseText), to answer in JSON-RPC.
const Route = "/t/:tenant/mcp"

// Register mounts the endpoint on e at /t/:tenant/mcp behind mw (the
// principal-resolving middleware of package auth), with CORS for the
// origins it accepts (see cors.go) outside mw, so that a 401 is readable.
func (h *Handler) Register(e *echo.Echo, mw ...echo.MiddlewareFunc) {
	e.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, Route, func(c echo.Context) error {
		h.ServeTenant(c.Response(), c.Request(), c.Param("tenant"))
		return nil
	}, append([]echo.MiddlewareFunc{h.corsHeaders}, mw...)...)
	e.OPTIONS(Route, h.preflight)
}

// peek is what the endpoint reads from a POST body before the SDK does: the
// method, the tool name, the request id and the 2026-07-28 _meta version.
type peek struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Name string `json:"name"`
		Meta struct {
			Version      string          `json:"io.modelcontextprotocol/protocolVersion"`
			ClientInfo   json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
			Capabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
		Notifications *struct {
			ToolsListChanged bool `json:"toolsListChanged"`
		} `json:"notifications"`
	} `json:"params"`
}

type peekKey struct{}

// ServeTenant serves one request for the tenant named slug. The principal
// must already be in the request context.
func (h *Handler) ServeTenant(w http.ResponseWriter, r *http.Request, slug string) {
	p, ok := identity.PrincipalFrom(r.Context())
	if !ok {
		http.Error(w, "unauthenticated", http.StatusUnauthorized)
		return
	}
	if p.TenantSlug != "" && p.TenantSlug != slug {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if !h.originAllowed(r) {
		http.Error(w, "Forbidden: Origin not allowed", http.StatusForbidden)
		return
	}
	var pk peek
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
		if err != nil {
			// The limit may be this endpoint's or the server's (echo's body
			// limit, which a chunked body meets only while it is read).
			var mbe *http.MaxBytesError
			var he *echo.HTTPError
			if errors.As(err, &mbe) || (errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			_ = json.Unmarshal(body, &pk) // the SDK reports malformed bodies
		}
		if pk.Method == "tools/call" {
			note := &callNote{}
			r = r.WithContext(context.WithValue(r.Context(), callNoteKey{}, note))
			defer note.annotate(r.Context())
		}
		if h.refuseText(w, r, p, &pk, body) {
			return
		}
		if pk.Method == "tools/call" && p.Kind == identity.KindExternal && h.stepUp(w, r, p, &pk, slug) {
			return
		}
	}
	var release func() // the stream's place under the limits, until it ends
	if holdsStream(r, &pk) {
		var ok bool
		if release, ok = h.admitStream(w, p, &pk); !ok {
			return
		}
		defer func() {
			if release != nil {
				release()
			}
		}()
	}
	r = r.WithContext(context.WithValue(r.Context(), peekKey{}, &pk))
	if pk.Method == "subscriptions/listen" {
		// A listen request the SDK holds is written by the SDK: its stream
		// bounds those writes through the response's controller.
		r = r.WithContext(context.WithValue(r.Context(), writerKey{}, http.NewResponseController(w)))
	}
	if modernEra(r, &pk) {
		if h.serveList(w, r, p, &pk, body) || h.serveCall(w, r, p, &pk, body) {
			return
		}
		if wait, ok := h.serveListen(w, r, p, &pk); ok {
			if wait != nil {
				// The held stream waits outside the middleware chain when
				// the server lets it (server.Park), with a small stack.
				held := release
				release = nil
				wait := func() {
					if held != nil {
						defer held()
					}
					wait()
				}
				if !server.Park(r.Context(), wait) {
					wait()
				}
			}
			return
		}
		h.modern.ServeHTTP(w, r)
		return
	}
	h.serveLegacy(w, r, p, body)
}

// modernEra reports whether r speaks 2026-07-28 (or later): by its
// MCP-Protocol-Version header, its _meta, or a server/discover probe.
func modernEra(r *http.Request, pk *peek) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return IsStateless(v) || pk.Params.Meta.Version != "" || pk.Method == "server/discover"
}

// tokenInfo bridges Visor's principal into the SDK's per-request token
// info, which reaches the receiving middleware as RequestExtra.TokenInfo.
// The SDK's Extra is a map; it carries one typed value (requestExtra)
// under one key, read back by extraOf.
func (h *Handler) tokenInfo(ctx context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
	p, ok := identity.PrincipalFrom(r.Context())
	if !ok {
		return nil, sdkauth.ErrInvalidToken
	}
	x := &requestExtra{principal: p}
	x.peek, _ = r.Context().Value(peekKey{}).(*peek)
	x.note, _ = r.Context().Value(callNoteKey{}).(*callNote)
	x.writer, _ = r.Context().Value(writerKey{}).(*http.ResponseController)
	return &sdkauth.TokenInfo{UserID: owner(p), Scopes: p.Scopes, Extra: map[string]any{extraKey: x}}, nil
}

// requestExtra is what the endpoint hands its own middleware with each
// request through the SDK: the caller, the peeked request, the call's
// note and the response's controller (a listen request's; else nil).
type requestExtra struct {
	principal identity.Principal
	peek      *peek
	note      *callNote
	writer    *http.ResponseController
}

// extraKey is requestExtra's one key in the SDK's TokenInfo.Extra.
const extraKey = "visor"

// extraOf returns the requestExtra of req, nil when it carries none.
func extraOf(req sdk.Request) *requestExtra {
	ex := req.GetExtra()
	if ex == nil || ex.TokenInfo == nil {
		return nil
	}
	x, _ := ex.TokenInfo.Extra[extraKey].(*requestExtra)
	return x
}

type writerKey struct{}

// writerOf returns the controller of the HTTP response that carries req's
// answer, when the endpoint kept one (a listen request's).
func writerOf(req sdk.Request) *http.ResponseController {
	if x := extraOf(req); x != nil {
		return x.writer
	}
	return nil
}

// noteOf returns the note of the HTTP request that carried req, if any.
func noteOf(req sdk.Request) *callNote {
	if x := extraOf(req); x != nil {
		return x.note
	}
	return nil
}

func principalOf(req sdk.Request) (identity.Principal, *peek, bool) {
	x := extraOf(req)
	if x == nil {
		return identity.Principal{}, nil, false
	}
	return x.principal, x.peek, true
}

// owner names a principal for session binding: the same caller presents
// the same owner on every request.
func owner(p identity.Principal) string { return p.TenantID.String() + "/" + p.ID() }

// Close ends every stream this endpoint holds (listen streams and legacy
// sessions with their GET streams), so a graceful shutdown is not held up by
// idle notification streams; clients reconnect to another replica. Register
// it with http.Server.RegisterOnShutdown.
func (h *Handler) Close() {
	h.closeOnce.Do(func() {
		close(h.closing)
		h.endLife()
		for _, b := range h.sessions.all() {
			_ = b.session.Close()
		}
	})
}
