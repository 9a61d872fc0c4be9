package server

import (
	"context"
	"log/slog"
	"sync"
)

// annotations are attributes a handler adds to its request's log line.
type annotations struct {
	mu    sync.Mutex
	attrs []slog.Attr
}

type annotationsKey struct{}

// maxAnnotations bounds what one request can add to its log line.
const maxAnnotations = 16

// Annotate adds attrs to the log line of the request ctx belongs to (the
// MCP endpoint adds the tool called and its outcome). It is safe from any
// goroutine and does nothing outside a request.
func Annotate(ctx context.Context, attrs ...slog.Attr) {
	a, ok := ctx.Value(annotationsKey{}).(*annotations)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, at := range attrs {
		if len(a.attrs) < maxAnnotations {
			a.attrs = append(a.attrs, at)
		}
	}
}

func (a *annotations) all() []slog.Attr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attrs
}
