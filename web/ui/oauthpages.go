package ui

import (
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/oauth"
)

// The Frame renders the authorization server's pages.
var _ oauth.Pages = (*Frame)(nil)

// Login implements oauth.Pages.
func (f *Frame) Login(c echo.Context, t identity.Tenant, status int, v oauth.LoginView) error {
	return f.Render(c, status, "login", &View{Title: "login.title", Tenant: t, Data: v})
}

// Consent implements oauth.Pages.
func (f *Frame) Consent(c echo.Context, t identity.Tenant, v oauth.ConsentView, formTarget string) error {
	page := &View{Title: "consent.title", Tenant: t, Data: v}
	if f.prefs != nil {
		if l, err := f.prefs.MemberLanguage(c.Request().Context(), t.ID, v.MemberID); err == nil {
			page.Lang = requestLang(c.Request(), Lang(l))
		}
	}
	return f.Render(c, 200, "consent", page, formTarget)
}

// Problem implements oauth.Pages.
func (f *Frame) Problem(c echo.Context, t identity.Tenant, status int, p oauth.Problem) error {
	v := &View{Title: p.Title, Tenant: t}
	v.Lang = requestLang(c.Request(), "")
	v.Data = f.cat.T(v.Lang, p.Message, p.Args...)
	return f.Render(c, status, "error", v)
}
