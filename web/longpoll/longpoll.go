// Package longpoll is the HTTP edge for AI employees' runtimes that cannot
// receive webhooks: the long-poll that hands out an employee's wake-ups
// (each with its round's token), and the spend report a run makes for its
// responsibility. Its name leaves the standard library's runtime package
// unshadowed.
package longpoll

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
)

// Path is the long-poll route.
const Path = "/t/:tenant/runtime/wakeups"

// Tool names the long-poll in audit rows.
const Tool = "runtime.wakeups"

// EventRefused is the audit event of a refused long-poll.
const EventRefused = "runtime_refused"

// Handler serves the long-poll.
type Handler struct {
	rounds  *rounds.Service
	audit   audit.Recorder
	closing chan struct{}
	once    sync.Once
}

// New returns the long-poll handler.
func New(svc *rounds.Service, rec audit.Recorder) *Handler {
	return &Handler{rounds: svc, audit: rec, closing: make(chan struct{})}
}

// Register mounts the route behind mw (auth's bearer middleware).
func (h *Handler) Register(e *echo.Echo, mw echo.MiddlewareFunc) { e.GET(Path, h.wakeups, mw) }

// Close answers every waiting long-poll now (empty), for a graceful
// shutdown.
func (h *Handler) Close() { h.once.Do(func() { close(h.closing) }) }

// Wakeups is the long-poll's answer.
type Wakeups struct {
	Wakeups []rounds.Payload `json:"wakeups"`
}

// wakeups is GET /t/{tenant}/runtime/wakeups?wait=<seconds>&max=<n>: the
// employee's pending wake-ups, each handed out exactly once with its round
// token; with none pending it waits up to wait seconds (0-60, default 0)
// for one. Only an AI employee's own key may call it.
func (h *Handler) wakeups(c echo.Context) error {
	ctx := c.Request().Context()
	p, _ := identity.PrincipalFrom(ctx)
	t, _ := auth.TenantFrom(ctx)
	if p.Kind != identity.KindEmployee || p.OnRound() {
		msg := "only an AI employee's own key takes its wake-ups (not an operator's key, an OAuth token or a round token)"
		if err := h.audit.Record(ctx, audit.Entry{TenantID: t.ID, PrincipalKind: string(p.Kind), PrincipalID: p.ID(), Tool: Tool,
			Outcome: audit.OutcomeRefused, Event: EventRefused, Message: msg, At: time.Now(), Source: audit.SourceMCP}); err != nil {
			return err
		}
		return fault.New(fault.Forbidden, "%s", msg)
	}
	wait, err := intParam(c, "wait", 0, 0, int(rounds.MaxWait/time.Second))
	if err != nil {
		return err
	}
	limit, err := intParam(c, "max", 10, 1, rounds.MaxTake)
	if err != nil {
		return err
	}
	ps, err := h.rounds.Poll(ctx, t.ID, t.Slug, p.AgentID, limit, time.Duration(wait)*time.Second, h.closing)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, Wakeups{Wakeups: ps})
}

func intParam(c echo.Context, name string, def, lo, hi int) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fault.New(fault.Invalid, "%s must be a whole number from %d to %d", name, lo, hi)
	}
	return n, nil
}
