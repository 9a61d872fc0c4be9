package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// Changes reports whether an operation changes state, and so is recorded
// in the audit trail whatever its outcome: every method but GET and HEAD.
// A read is recorded only when it is refused.
func (op Operation) Changes() bool {
	return op.Method != http.MethodGet && op.Method != http.MethodHead
}

// record writes one audit row for every request to an operation that
// changes state, once its principal is known: what was done (the
// operation id), to which object, by whom, the request body with every
// secret masked, and how it ended (ok, rejected for a client mistake,
// refused by authorization, failed). The row is durable before the answer
// is sent: the handler's response is held until Record returns. When the
// row of a change that succeeded cannot be written, the failure is logged
// at error level and the caller gets 503 saying the change was applied but
// its result is withheld (as for a tool call); the row of a refused or
// rejected request that cannot be written is logged, and the refusal
// answered.
// A read (GET) is recorded only when it is refused (401 or 403 for a known
// principal), as a refused change is: the refusal is the error authorize
// returns, so its row is written before the error is answered.
// Unauthenticated requests are not recorded: nobody outside a tenant can
// write into its trail.
func (a *API) record(op Operation) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if a.audit == nil {
			return next
		}
		if !op.Changes() {
			return a.recordRefusal(op, next)
		}
		return func(c echo.Context) error {
			p, ok := identity.PrincipalFrom(c.Request().Context())
			if !ok {
				return next(c)
			}
			start := time.Now()
			body := readBody(c.Request())
			res := c.Response()
			orig := res.Writer
			held := &heldResponse{header: http.Header{}}
			res.Writer = held
			err := next(c)
			res.Writer = orig

			status := res.Status
			msg := ""
			if err != nil {
				status, msg = statusOf(err)
			} else if status >= 400 {
				msg = errorMessage(held.body.Bytes())
			}
			e := a.operatorRow(c, op, p, body, held.body.Bytes(), status, msg)
			e.Latency = time.Since(start)
			if e.TenantID != uuid.Nil {
				ctx := context.WithoutCancel(c.Request().Context())
				if rerr := a.audit.Record(ctx, e); rerr != nil {
					a.log.ErrorContext(ctx, "operator action not recorded in the audit trail", "action", e.Action, "object", e.Object, "outcome", e.Outcome, "err", rerr)
					if err == nil && status < 400 {
						// Like a tool call, a change whose row cannot be written
						// is not reported as a success: its answer is withheld.
						res.Committed, res.Status, res.Size = false, 0, 0
						return fault.Newf(fault.Unavailable, rerr,
							"the change was applied, but the audit trail could not record it, so its result is withheld; check %s before retrying", e.Object)
					}
				}
			}
			if held.status != 0 || held.body.Len() > 0 {
				for k, v := range held.header {
					orig.Header()[k] = v
				}
				if held.status != 0 {
					orig.WriteHeader(held.status)
				}
				_, _ = orig.Write(held.body.Bytes())
			}
			return err
		}
	}
}

// recordRefusal runs a read and records it only when it is refused.
func (a *API) recordRefusal(op Operation, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, ok := identity.PrincipalFrom(c.Request().Context())
		err := next(c)
		if !ok || err == nil {
			return err
		}
		status, msg := statusOf(err)
		if audit.OutcomeOf(status) != audit.OutcomeRefused {
			return err
		}
		if e := a.operatorRow(c, op, p, nil, nil, status, msg); e.TenantID != uuid.Nil {
			ctx := context.WithoutCancel(c.Request().Context())
			if rerr := a.audit.Record(ctx, e); rerr != nil {
				a.log.ErrorContext(ctx, "refused read not recorded in the audit trail", "action", e.Action, "object", e.Object, "err", rerr)
			}
		}
		return err
	}
}

// operatorRow builds the audit row of one operator request (audit.Operator).
func (a *API) operatorRow(c echo.Context, op Operation, p identity.Principal, body, answer []byte, status int, msg string) audit.Entry {
	// The row goes to the caller's own tenant; the platform token's, to
	// the tenant it addresses. A credential of one tenant addressing
	// another (refused by authorize) writes nothing into either.
	tenantID := p.TenantID
	if t, ok := auth.TenantFrom(c.Request().Context()); ok && (p.IsPlatform() || t.ID == p.TenantID) {
		tenantID = t.ID
	} else if ok {
		tenantID = uuid.Nil
	}
	created := createdID(answer)
	if tenantID == uuid.Nil && op.Path == "/tenants" && status/100 == 2 {
		tenantID, _ = uuid.Parse(created) // a new tenant's first row is its creation
	}
	return audit.Operator{TenantID: tenantID, Source: audit.SourceAdminAPI, PrincipalKind: string(p.Kind), PrincipalID: p.ID(),
		Action: op.ID, Object: objectOf(c, op, created), Body: body, Status: status, Message: msg}.Row()
}

// statusOf is the status and message ErrorHandler answers err with.
func statusOf(err error) (int, string) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code, http.StatusText(he.Code)
	}
	code := fault.CodeOf(err)
	return fault.HTTPStatus(code), fault.Message(err)
}

func errorMessage(answer []byte) string {
	var b ErrorBody
	_ = json.Unmarshal(answer, &b)
	return b.Error.Message
}

// createdID is the id of what a create returned: its "id" (an OAuth
// client's "client_id"), or the "id" of the one object it wraps (a new
// key comes as {"key": {...}, "token": ...}); "" when none.
func createdID(answer []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(answer, &top) != nil {
		return ""
	}
	for _, f := range []string{"id", "client_id"} {
		var id string
		if json.Unmarshal(top[f], &id) == nil && id != "" {
			return id
		}
	}
	for _, v := range top {
		var inner struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(v, &inner) == nil && inner.ID != "" {
			return inner.ID
		}
	}
	return ""
}

// Object kinds by path parameter and by collection.
var (
	paramKinds = map[string]string{
		"request": "capability_request", "client": "oauth_client", "round": "round_token", "name": "agent_name",
		"source": "knowledge_source",
	}
	collectionKinds = map[string]string{
		"tenants": "tenant", "members": "member", "agents": "agent", "keys": "key", "grants": "grant",
		"clients": "oauth_client", "round-tokens": "round_token", "db-sources": "db_source",
	}
)

// objectOf names what an operation acted on, "kind:id": the new object of
// a create (a POST to a collection, named by the collection in the
// singular, and the id it was given), and otherwise the
// last path parameter (e.g. "member:<id>" for PATCH …/members/{member}
// and POST …/agents/{agent}/trash; "tenant:<slug>" for the tenant).
func objectOf(c echo.Context, op Operation, created string) string {
	segs := strings.Split(strings.Trim(op.Path, "/"), "/")
	last := segs[len(segs)-1]
	kind, ok := collectionKinds[last]
	if !ok && !strings.HasPrefix(last, ":") && strings.HasSuffix(last, "s") {
		kind, ok = strings.TrimSuffix(last, "s"), true // a collection: tasks, routines, …
	}
	if ok && op.Method == http.MethodPost {
		if created == "" {
			return kind
		}
		return kind + ":" + created
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if name, ok := strings.CutPrefix(segs[i], ":"); ok {
			kind = name
			if k, ok := paramKinds[name]; ok {
				kind = k
			}
			return kind + ":" + c.Param(name)
		}
	}
	return strings.Join(segs, "/")
}

// readBody reads the request body and puts back a reader that gives the
// handler the same bytes (and the same error, such as a body over the
// limit).
func readBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	rest := io.Reader(bytes.NewReader(b))
	if err != nil {
		rest = io.MultiReader(rest, errReader{err})
		b = nil // never record part of a body
	}
	r.Body = io.NopCloser(rest)
	return b
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// heldResponse holds a handler's answer until its audit row is durable.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}
