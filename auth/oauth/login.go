package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// SessionCookieName names the member's session cookie: HttpOnly and
// SameSite=Lax (it must ride the top-level redirect from a client to the
// authorization endpoint).
const SessionCookieName = "visor_session"

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Server) secureCookies() bool { return strings.HasPrefix(s.urls.Base, "https://") }

// member returns the signed-in member of tenant t, if any.
func (s *Server) member(c echo.Context, t identity.Tenant) (identity.Member, bool) {
	ck, err := c.Cookie(SessionCookieName)
	if err != nil {
		return identity.Member{}, false
	}
	_, m, err := s.session(c.Request().Context(), ck.Value)
	if err != nil || m.TenantID != t.ID {
		return identity.Member{}, false
	}
	return m, true
}

func hashSession(v string) []byte {
	sum := sha256.Sum256([]byte(v))
	return sum[:]
}

func (s *Server) session(ctx context.Context, value string) (credentials.Session, identity.Member, error) {
	ss, err := s.store.SessionByHash(ctx, hashSession(value), s.now())
	if err != nil {
		return ss, identity.Member{}, err
	}
	m, err := s.identity.Store().Member(ctx, ss.TenantID, ss.MemberID)
	return ss, m, err
}

// SessionCookie implements auth.SessionResolver.
func (s *Server) SessionCookie() string { return SessionCookieName }

// ResolveSession implements auth.SessionResolver: a member's session acts
// in the admin API as an operator-kind principal carrying the member and
// its current role, with the scopes that role holds (identity.Role.Scopes).
func (s *Server) ResolveSession(ctx context.Context, value string) (identity.Tenant, identity.Principal, error) {
	ss, m, err := s.session(ctx, value)
	if fault.Is(err, fault.NotFound) {
		return identity.Tenant{}, identity.Principal{}, fault.New(fault.Unauthorized, "the session has ended; sign in again")
	}
	if err != nil {
		return identity.Tenant{}, identity.Principal{}, err
	}
	t, err := s.identity.Store().Tenant(ctx, ss.TenantID)
	if err != nil {
		return t, identity.Principal{}, err
	}
	return t, identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindOperator, MemberID: m.ID, Role: m.Role,
		CredentialID: identity.SessionPrefix + hex.EncodeToString(ss.IDHash[:8]), Scopes: m.Role.Scopes()}, nil
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
	undoIP, okIP := s.loginIP.reserve(ctx, t.ID.String()+"|"+sourceKey(c.RealIP()))
	undoEmail, okEmail := memberLimit.reserve(ctx, memberKey)
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
	value := randomToken()
	ss := credentials.Session{TenantID: t.ID, IDHash: hashSession(value), MemberID: m.ID, ExpiresAt: s.now().Add(s.cfg.SessionTTL)}
	if err := s.store.CreateSession(ctx, &ss); err != nil {
		s.log.ErrorContext(ctx, "create session", "tenant", t.ID, "err", err)
		d.Error = msgLoginUnavailable
		return s.renderLogin(c, t, http.StatusServiceUnavailable, d)
	}
	// A new session at every sign-in: whatever session this browser held
	// before (perhaps planted, perhaps another member's) ends now.
	if old, err := c.Cookie(SessionCookieName); err == nil && old.Value != "" {
		if err := s.store.DeleteSession(ctx, hashSession(old.Value)); err != nil {
			s.log.ErrorContext(ctx, "end the previous session", "tenant", t.ID, "err", err)
		}
	}
	s.rememberDevice(c, t, email, device)
	s.log.InfoContext(ctx, "member signed in", "tenant", t.ID, "member", m.ID)
	c.SetCookie(&http.Cookie{Name: SessionCookieName, Value: value, Path: "/", HttpOnly: true, Secure: s.secureCookies(),
		SameSite: http.SameSiteLaxMode, Expires: ss.ExpiresAt})
	return c.Redirect(http.StatusSeeOther, d.ReturnTo)
}

func (s *Server) logout(c echo.Context) error {
	t, _ := auth.TenantFrom(c.Request().Context())
	if !s.pages.CheckCSRF(c) {
		return s.pages.Problem(c, t, http.StatusForbidden, Problem{Title: "signout.title", Message: msgFormExpired})
	}
	if ck, err := c.Cookie(SessionCookieName); err == nil {
		if err := s.store.DeleteSession(c.Request().Context(), hashSession(ck.Value)); err != nil {
			s.log.ErrorContext(c.Request().Context(), "delete session", "err", err)
		}
	}
	c.SetCookie(&http.Cookie{Name: SessionCookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secureCookies()})
	return c.Redirect(http.StatusSeeOther, "/t/"+t.Slug+"/login")
}
