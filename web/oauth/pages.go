package oauth

import (
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
)

// Pages renders the member-facing HTML of the authorization server — the
// sign-in, consent and error pages — and checks the CSRF token of their
// forms. The web UI implements it, so these pages share its layout,
// message catalog and language; the server passes message keys, never
// sentences.
type Pages interface {
	Login(c echo.Context, t identity.Tenant, status int, v LoginView) error
	// Consent renders the consent page; formTarget is the CSP form-action
	// source the client's redirect needs.
	Consent(c echo.Context, t identity.Tenant, v ConsentView, formTarget string) error
	Problem(c echo.Context, t identity.Tenant, status int, p Problem) error
	CheckCSRF(c echo.Context) bool
}

// LoginView is the sign-in page's data. Error is a message key.
type LoginView struct {
	ReturnTo, Email, Error string
}

// ConsentView is the consent page's data. RedirectHost is where the member
// is sent after answering: a host, or a native application's scheme when
// NativeApp. MemberID names the signed-in member, whose language the page
// speaks.
type ConsentView struct {
	MemberID                                                uuid.UUID
	ClientName, ClientID, RedirectHost, MemberEmail, Action string
	NativeApp                                               bool
	Role                                                    identity.Role
	Scopes                                                  []ScopeLine
	Withheld                                                []string
}

// ScopeLine is one scope on the consent page and the tools it adds for the
// client; the page says in words what the scope allows.
type ScopeLine struct {
	Name  string
	Tools []string
}

// Problem is an error page: Title and Message are message keys, Args the
// message's arguments.
type Problem struct {
	Title, Message string
	Args           []any
}

// Message keys of the pages' errors.
const (
	msgFormExpired      = "form.expired"
	msgConsentExpired   = "consent.expired"
	msgLoginLimited     = "login.limited"
	msgLoginWrong       = "login.wrong"
	msgLoginUnavailable = "login.unavailable"
)
