package longpoll

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
)

// SpendPath is where a runtime reports what a round of a responsibility
// run spent.
const SpendPath = "/t/:tenant/runtime/spend"

// SpendTool names the spend report in audit rows.
const SpendTool = "runtime.spend"

// Spender is the responsibilities service's spend report.
type Spender interface {
	ReportSpend(ctx context.Context, tenantID, agentID, task uuid.UUID, cents int64) (responsibilities.Run, error)
}

// SpendHandler serves spend reports.
type SpendHandler struct {
	svc   Spender
	audit audit.Recorder
}

// NewSpend returns the spend report handler.
func NewSpend(svc Spender, rec audit.Recorder) *SpendHandler {
	return &SpendHandler{svc: svc, audit: rec}
}

// Register mounts the route behind mw (auth's bearer middleware).
func (h *SpendHandler) Register(e *echo.Echo, mw echo.MiddlewareFunc) {
	e.POST(SpendPath, h.report, mw)
}

// SpendReport is the body of a spend report: what the round spent since
// its last report, in cents.
type SpendReport struct {
	CostCents *int64 `json:"cost_cents"`
}

// maxSpendBody bounds a report's body.
const maxSpendBody = 1 << 10

// report is POST /t/{tenant}/runtime/spend with {"cost_cents": n}: adds n
// to the run whose round the bearer's round token is. Only a round token
// reports; the answer is the run with its spend so far.
func (h *SpendHandler) report(c echo.Context) error {
	ctx := c.Request().Context()
	p, _ := identity.PrincipalFrom(ctx)
	t, _ := auth.TenantFrom(ctx)
	if p.Kind != identity.KindEmployee || !p.OnRound() {
		return h.refuse(ctx, t, p, "only the round token of a responsibility run reports its spend (not a key, an OAuth token or a session)")
	}
	var in SpendReport
	dec := echo.DefaultBinder{}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxSpendBody)
	if err := dec.BindBody(c, &in); err != nil || in.CostCents == nil {
		return fault.New(fault.Invalid, `the body must be {"cost_cents": <whole number of cents>}`)
	}
	run, err := h.svc.ReportSpend(ctx, t.ID, p.AgentID, p.TaskID, *in.CostCents)
	if fault.Is(err, fault.Forbidden) || fault.Is(err, fault.NotFound) {
		return h.refuse(ctx, t, p, fault.Message(err))
	}
	if fault.Is(err, fault.Conflict) {
		// A report after its run closed: not counted, answered 409, audited.
		if rerr := h.record(ctx, t, p, fault.Message(err)); rerr != nil {
			return rerr
		}
		return err
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// refuse records the refusal in the tenant's audit trail, then answers 403.
func (h *SpendHandler) refuse(ctx context.Context, t identity.Tenant, p identity.Principal, msg string) error {
	if err := h.record(ctx, t, p, msg); err != nil {
		return err
	}
	return fault.New(fault.Forbidden, "%s", msg)
}

// record writes a refused report's audit row.
func (h *SpendHandler) record(ctx context.Context, t identity.Tenant, p identity.Principal, msg string) error {
	return h.audit.Record(ctx, audit.Entry{ID: audit.NewID(), TenantID: t.ID, PrincipalKind: string(p.Kind), PrincipalID: p.ID(),
		Tool: SpendTool, Outcome: audit.OutcomeRefused, Event: EventRefused, Message: msg, At: time.Now(), Source: audit.SourceMCP})
}
