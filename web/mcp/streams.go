package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// toolsChangedToken marks the progress notification that the sending
// middleware turns into notifications/tools/list_changed. The SDK emits
// list_changed only to every session of a server at once; sending it
// through one ServerSession this way reaches exactly one stream and costs
// no per-stream server.
const toolsChangedToken = "visor/tools-list-changed"

// stream is one live notification stream: a legacy session's GET stream
// (ctx nil: the SDK routes out-of-request notifications to it) or a
// 2026-07-28 subscriptions/listen request (ctx is the listen request's, so
// the notification lands on its response stream).
type stream struct {
	p        identity.Principal
	session  *sdk.ServerSession
	ctx      context.Context
	listenID any
	// cancel ends a listen request (nil for a legacy GET stream).
	cancel context.CancelFunc
	// rc is the held response's, to bound the SDK's writes on it (nil when
	// unknown); life is the endpoint's; stop ends the held response.
	rc   *http.ResponseController
	life context.Context
	stop context.CancelFunc

	mu sync.Mutex // one notification at a time, each with its own deadline
	// revoked is set by Close: the stream ends because its credential was
	// revoked, which its client is told.
	revoked atomic.Bool
}

var _ live.Stream = (*stream)(nil)

func (s *stream) Principal() identity.Principal { return s.p }

// NotifyToolsChanged sends notifications/tools/list_changed on this stream
// only. The SDK writes it on the held response at once and does not heed
// ctx, so the write gets ctx's deadline on the connection; when it fails,
// the held response ends (the session, if any, stays).
func (s *stream) NotifyToolsChanged(ctx context.Context) error {
	params := &sdk.ProgressNotificationParams{ProgressToken: toolsChangedToken}
	nctx := ctx
	if s.ctx != nil {
		nctx = s.ctx
		params.Meta = sdk.Meta{sdk.MetaKeySubscriptionID: s.listenID}
	}
	if s.rc == nil {
		return s.session.NotifyProgress(nctx, params)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := withDeadline(ctx, s.life, s.rc, func() error { return s.session.NotifyProgress(nctx, params) })
	if err != nil && s.stop != nil {
		s.stop()
	}
	return err
}

// Close ends the stream because its credential was revoked. A listen
// request's context is cancelled, so the SDK ends its response. A legacy
// GET stream ends with its whole session: the session was bound to the
// revoked credential's caller, and its next request would be refused by
// the auth middleware anyway.
func (s *stream) Close() {
	s.revoked.Store(true)
	if s.cancel != nil {
		s.cancel()
		return
	}
	go func() { _ = s.session.Close() }()
}

// send rewrites the marked progress notification into list_changed.
func (h *Handler) send(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "notifications/progress" {
			if pp, ok := req.GetParams().(*sdk.ProgressNotificationParams); ok && pp.ProgressToken == toolsChangedToken {
				ss, _ := req.GetSession().(*sdk.ServerSession)
				return next(ctx, "notifications/tools/list_changed",
					&sdk.ServerRequest[*sdk.ToolListChangedParams]{Session: ss, Params: &sdk.ToolListChangedParams{Meta: pp.Meta}})
			}
		}
		return next(ctx, method, req)
	}
}

// listen registers a 2026-07-28 subscriptions/listen stream for the time
// the SDK holds it open.
func (h *Handler) listen(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	p, pk, ok := principalOf(req)
	ss, _ := req.GetSession().(*sdk.ServerSession)
	if ok && ss != nil {
		var id any
		if pk != nil {
			_ = json.Unmarshal(pk.ID, &id)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		rc := writerOf(req)
		unregister := h.streams.Open(ctx, &stream{p: p, session: ss, ctx: ctx, listenID: id, cancel: cancel, rc: rc, life: h.life, stop: cancel})
		defer unregister()
	}
	return next(ctx, method, req)
}
