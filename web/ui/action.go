package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// action wraps a form post: it counts the post against the member's rate
// limit, checks the CSRF token, checks that the member may take need (the
// authority matrix, as the admin API does), runs h, and records the
// outcome — refusals included — in the audit trail under op (the admin
// API's operation id for the same change) before the answer is sent. A
// change whose row cannot be written is reported as withheld, not done.
func (d *Dashboard) action(op string, need identity.Action, h Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		v := viewOf(c)
		ctx := c.Request().Context()
		if !d.allowPost(ctx, "dashboard-post|"+v.Tenant.ID.String()+"|"+v.Member.ID.String()) {
			return d.fail(c, v, fault.New(fault.RateLimited, "too many changes in a minute; wait a moment"))
		}
		if !d.f.CheckCSRF(c) {
			_ = d.record(ctx, v, op, nil, http.StatusForbidden, "the form's CSRF token is missing or wrong")
			return d.f.Render(c, http.StatusForbidden, "error", &View{Title: "dash.refused", Tenant: v.Tenant, Lang: v.Lang,
				Member: v.Member, Principal: v.Principal, Data: v.T("form.expired")})
		}
		start := time.Now()
		form := formChange(c)
		if err := v.Principal.Check(need); err != nil {
			_ = d.record(ctx, v, op, form, http.StatusForbidden, fault.Message(err))
			return d.refusePage(c, v, err)
		}
		res := c.Response()
		orig := res.Writer
		held := &heldWriter{header: http.Header{}}
		res.Writer = held
		err := h(c, v)
		if err != nil {
			err = d.fail(c, v, err)
		}
		res.Writer = orig
		status := res.Status
		msg := ""
		if err != nil {
			status, msg = http.StatusInternalServerError, err.Error()
		} else if status >= 400 {
			msg = v.failure
		}
		if rerr := d.record(ctx, v, op, form, status, msg, time.Since(start)); rerr != nil && status < 400 {
			res.Committed, res.Status, res.Size = false, 0, 0
			return d.fail(c, v, fault.Newf(fault.Unavailable, rerr,
				"the change was applied, but the audit trail could not record it, so its result is withheld; reload the page before retrying"))
		}
		for k, vs := range held.header {
			orig.Header()[k] = vs
		}
		if held.status != 0 {
			orig.WriteHeader(held.status)
		}
		_, _ = orig.Write(held.body.Bytes())
		return err
	}
}

// formChange is the posted form as a JSON object, without the CSRF token
// and with every secret masked (audit.MaskedChange).
func formChange(c echo.Context) []byte {
	fv, err := c.FormParams()
	if err != nil {
		return nil
	}
	m := map[string]any{}
	for k, vs := range fv {
		if k == CSRFField || len(vs) == 0 {
			continue
		}
		if len(vs) == 1 {
			m[k] = vs[0]
		} else {
			m[k] = vs
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// record writes the audit row of one dashboard action.
func (d *Dashboard) record(ctx context.Context, v *View, op string, form []byte, status int, msg string, latency ...time.Duration) error {
	if d.d.Audit == nil {
		return nil
	}
	o := audit.Operator{TenantID: v.Tenant.ID, Source: audit.SourceDashboard, PrincipalKind: string(v.Principal.Kind),
		PrincipalID: v.Principal.ID(), Action: op, Object: v.Object, Body: form, Status: status, Message: msg}
	if len(latency) > 0 {
		o.Latency = latency[0]
	}
	e := o.Row()
	err := d.d.Audit.Record(context.WithoutCancel(ctx), e)
	if err != nil {
		d.d.Logger.ErrorContext(ctx, "dashboard action not recorded in the audit trail", "action", op, "outcome", e.Outcome, "err", err)
	}
	return err
}

// heldWriter holds a response until its audit row is written.
type heldWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *heldWriter) Header() http.Header         { return w.header }
func (w *heldWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *heldWriter) WriteHeader(code int)        { w.status = code }

// formFailure words err for a form: the catalog's line for its fault
// code (the field's name in it when the service's message starts with a
// field the catalog knows) and the service's English message as detail.
// It also keeps that message for the action's audit row.
func (v *View) formFailure(err error) (line, detail string) {
	msg := fault.Message(err)
	v.failure = msg
	key := "form_error." + string(fault.CodeOf(err))
	if fault.CodeOf(err) == fault.Conflict && strings.Contains(msg, "changed since") {
		return v.T("form_error.stale"), msg // a version conflict: nothing "already exists"
	}
	if _, ok := v.cat.Message(v.Lang, key); !ok {
		key = "form_error.other"
	}
	if f, _, ok := strings.Cut(msg, " "); ok {
		if name, ok := v.cat.Message(v.Lang, "field."+f); ok {
			return v.T(key+"_field", name), msg
		}
	}
	return v.T(key), msg
}

// refusePage answers a member who may not open a page or take an action.
func (d *Dashboard) refusePage(c echo.Context, v *View, err error) error {
	v.Title, v.Data, v.ErrorDetail = "dash.refused", v.T("error.refused_line"), fault.Message(err)
	v.failure = fault.Message(err)
	return d.f.Render(c, http.StatusForbidden, "error", v)
}

// fail renders err as an error page: a client's mistake with the
// domain's own message, anything else as a failure on our side (logged).
// It returns nil once the page is written.
func (d *Dashboard) fail(c echo.Context, v *View, err error) error {
	if err == nil {
		return nil
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return err
	}
	code := fault.CodeOf(err)
	status := fault.HTTPStatus(code)
	msg := fault.Message(err)
	if status >= 500 {
		d.d.Logger.ErrorContext(c.Request().Context(), "dashboard", "path", c.Path(), "err", err)
		if code != fault.Unavailable {
			msg = v.T("oauth.our_fault")
		}
	}
	v.failure = msg
	v.Title = "error." + string(code)
	if status >= 500 && code != fault.Unavailable {
		v.Data = msg
	} else {
		line := "error_line." + string(code)
		if !d.f.cat.has(line) {
			line = "error_line.internal"
		}
		v.Data, v.ErrorDetail = v.T(line), msg
	}
	if !d.f.cat.has(v.Title) {
		v.Title = "error.internal"
	}
	return d.f.Render(c, status, "error", v)
}

// form wraps a post that changes nothing (a preview): the CSRF token and
// the authority are checked as for an action, and refusals are audited
// under the operation "preview".
func (d *Dashboard) form(need identity.Action, h Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		v := viewOf(c)
		ctx := c.Request().Context()
		if !d.f.CheckCSRF(c) {
			_ = d.record(ctx, v, "preview", nil, http.StatusForbidden, "the form's CSRF token is missing or wrong")
			return d.f.Render(c, http.StatusForbidden, "error", &View{Title: "dash.refused", Tenant: v.Tenant, Lang: v.Lang,
				Member: v.Member, Principal: v.Principal, Data: v.T("form.expired")})
		}
		if err := v.Principal.Check(need); err != nil {
			_ = d.record(ctx, v, "preview", formChange(c), http.StatusForbidden, fault.Message(err))
			return d.refusePage(c, v, err)
		}
		return d.fail(c, v, h(c, v))
	}
}
