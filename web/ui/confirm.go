package ui

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
)

// ConfirmField is the form field that says the member confirmed a
// destructive action on the confirmation page.
const ConfirmField = "confirmed"

// confirmData is the confirmation page: the question, and the form that
// posts the original fields again with ConfirmField set.
type confirmData struct {
	Question, What, Button string
	Action                 string
	Fields                 [][2]string
	Back                   string
}

// confirmFirst puts a confirmation page in front of a destructive action
// h (an action handler): a post without ConfirmField shows the question
// ("Revoke the key ci-deployer?") with a button that posts the same form
// again, confirmed, and a link back. It is plain HTML: no script, so it
// works under the strict CSP and without JavaScript. A post the action
// would refuse (a bad CSRF token, a member without need) goes straight to
// h, which refuses and audits it; the question itself changes nothing and
// is not audited.
func (d *Dashboard) confirmFirst(need identity.Action, question, button string, h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		v := viewOf(c)
		if c.FormValue(ConfirmField) == "1" || !d.f.CheckCSRF(c) || v.Principal.Check(need) != nil {
			return h(c)
		}
		form, err := c.FormParams()
		if err != nil {
			return h(c)
		}
		data := confirmData{Question: question, Button: button, What: strings.TrimSpace(form.Get("what")), Action: c.Request().URL.Path,
			Back: d.sameSiteBack(c, v)}
		for k, vs := range form {
			if k == CSRFField || k == ConfirmField {
				continue
			}
			for _, val := range vs {
				data.Fields = append(data.Fields, [2]string{k, val})
			}
		}
		v.Title, v.Data = "confirm.title", data
		c.Response().Header().Set("Cache-Control", "no-store")
		return d.f.Render(c, http.StatusOK, "confirm", v)
	}
}

// sameSiteBack is the page the member came from when it is a dashboard
// page of this tenant, else the overview.
func (d *Dashboard) sameSiteBack(c echo.Context, v *View) string {
	if u, err := url.Parse(c.Request().Referer()); err == nil && strings.HasPrefix(u.Path, v.Dash("")+"/") {
		if u.RawQuery != "" {
			return u.Path + "?" + u.RawQuery
		}
		return u.Path
	}
	return v.Dash("overview")
}
