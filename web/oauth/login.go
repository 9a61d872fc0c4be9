package oauth

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

func (s *Server) secureCookies() bool { return strings.HasPrefix(s.urls.Base, "https://") }

// member returns the signed-in member of tenant t, if any.
func (s *Server) member(c echo.Context, t identity.Tenant) (identity.Member, bool) {
	ck, err := c.Cookie(provider.SessionCookieName)
	if err != nil {
		return identity.Member{}, false
	}
	return s.core.SessionMember(c.Request().Context(), t, ck.Value)
}

// safeReturn keeps a post-login destination inside the tenant's own pages;
// the dashboard otherwise.
func safeReturn(t identity.Tenant, raw string) string {
	prefix := "/t/" + t.Slug + "/"
	if !strings.HasPrefix(raw, prefix) || strings.ContainsAny(raw, "\\\r\n") || strings.HasPrefix(raw, "//") ||
		strings.HasPrefix(raw, prefix+"login") {
		return prefix + "dashboard"
	}
	return raw
}

func (s *Server) renderLogin(c echo.Context, t identity.Tenant, status int, d LoginView) error {
	return s.pages.Login(c, t, status, d)
}

func (s *Server) loginPage(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	return s.renderLogin(c, t, http.StatusOK, LoginView{ReturnTo: safeReturn(t, c.QueryParam("return_to"))})
}

func (s *Server) login(c echo.Context) error {
	ctx := c.Request().Context()
	t, _ := auth.TenantFrom(ctx)
	d := LoginView{ReturnTo: safeReturn(t, c.FormValue("return_to")), Email: c.FormValue("email")}
	if !s.pages.CheckCSRF(c) {
		d.Error = msgFormExpired
		return s.renderLogin(c, t, http.StatusForbidden, d)
	}
	email := strings.ToLower(strings.TrimSpace(d.Email))
	// Each attempt is counted before the password is checked, so parallel
	// guesses cannot overrun the budget, and handed back unless it failed:
	// the limits count failed sign-ins only.
	// A browser the member signed in with before has its own budget
	// instead of the member's (device.go).
	memberLimit, memberKey := s.loginEmail, t.ID.String()+"|"+email
	device, known := s.knownDevice(c, t, email)
	if known {
		memberLimit, memberKey = s.loginDevice, t.ID.String()+"|"+device
	}
	undoIP, okIP := s.loginIP.Reserve(ctx, t.ID.String()+"|"+provider.SourceKey(c.RealIP()))
	undoEmail, okEmail := memberLimit.Reserve(ctx, memberKey)
	undo := func() { undoIP(); undoEmail() }
	if !okIP || !okEmail {
		undo()
		s.log.WarnContext(ctx, "sign-in rate limited", "tenant", t.ID, "ip", c.RealIP())
		d.Error = msgLoginLimited
		return s.renderLogin(c, t, http.StatusTooManyRequests, d)
	}
	m, err := s.identity.Authenticate(ctx, t.ID, email, c.FormValue("password"))
	if fault.Is(err, fault.Unauthorized) {
		s.log.InfoContext(ctx, "sign-in failed", "tenant", t.ID, "ip", c.RealIP())
		d.Error = msgLoginWrong
		return s.renderLogin(c, t, http.StatusUnauthorized, d)
	}
	undo()
	if err != nil {
		s.log.ErrorContext(ctx, "sign in", "tenant", t.ID, "err", err)
		d.Error = msgLoginUnavailable
		return s.renderLogin(c, t, http.StatusServiceUnavailable, d)
	}
	value, expires, err := s.core.StartSession(ctx, t, m)
	if err != nil {
		s.log.ErrorContext(ctx, "create session", "tenant", t.ID, "err", err)
		d.Error = msgLoginUnavailable
		return s.renderLogin(c, t, http.StatusServiceUnavailable, d)
	}
	// A new session at every sign-in: whatever session this browser held
	// before (perhaps planted, perhaps another member's) ends now.
	if old, err := c.Cookie(provider.SessionCookieName); err == nil && old.Value != "" {
		if err := s.core.EndSession(ctx, old.Value); err != nil {
			s.log.ErrorContext(ctx, "end the previous session", "tenant", t.ID, "err", err)
		}
	}
	s.rememberDevice(c, t, email, device)
	s.log.InfoContext(ctx, "member signed in", "tenant", t.ID, "member", m.ID)
	c.SetCookie(&http.Cookie{Name: provider.SessionCookieName, Value: value, Path: "/", HttpOnly: true, Secure: s.secureCookies(),
		SameSite: http.SameSiteLaxMode, Expires: expires})
	return c.Redirect(http.StatusSeeOther, d.ReturnTo)
}

func (s *Server) logout(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	if !s.pages.CheckCSRF(c) {
		return s.pages.Problem(c, t, http.StatusForbidden, Problem{Title: "signout.title", Message: msgFormExpired})
	}
	if ck, err := c.Cookie(provider.SessionCookieName); err == nil {
		if err := s.core.EndSession(c.Request().Context(), ck.Value); err != nil {
			s.log.ErrorContext(c.Request().Context(), "delete session", "err", err)
		}
	}
	c.SetCookie(&http.Cookie{Name: provider.SessionCookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secureCookies()})
	return c.Redirect(http.StatusSeeOther, "/t/"+t.Slug+"/login")
}
