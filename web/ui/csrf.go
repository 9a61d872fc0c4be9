package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/labstack/echo/v4"
)

// CSRF protection for every form, the sign-in and consent pages' included:
// a random cookie (SameSite=Strict, HttpOnly) and a form field holding the
// HMAC, under a server key, of that cookie and the member's session cookie
// (none before signing in). A cookie planted by a sibling site does not
// yield a valid field, and neither does a token taken from another session
// (an attacker's own): each token is good only with the session it was
// made for. A post must carry the field, and its Origin, when sent, must
// be this server's.
const (
	csrfCookie = "visor_csrf"
	// CSRFField is the name of the hidden form field every post carries.
	CSRFField = "csrf_token"
)

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// csrfToken returns the form token for this browser, setting the cookie
// when it is missing.
func (f *Frame) csrfToken(c echo.Context) string {
	if v, ok := c.Get(csrfCtxKey).(string); ok {
		return v // one cookie per response, however many forms
	}
	v := ""
	if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) == 43 {
		v = ck.Value
	} else {
		v = randomToken()
		c.SetCookie(&http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true, Secure: f.secure,
			SameSite: http.SameSiteStrictMode})
	}
	tok := f.csrfFor(v, f.sessionOf(c))
	c.Set(csrfCtxKey, tok)
	return tok
}

const csrfCtxKey = "ui-csrf"

func (f *Frame) csrfFor(cookie, session string) string {
	m := hmac.New(sha256.New, f.csrfKey)
	m.Write([]byte(cookie))
	m.Write([]byte{0})
	m.Write([]byte(session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionOf is the member's session cookie as the request carries it, ""
// before signing in.
func (f *Frame) sessionOf(c echo.Context) string {
	ck, err := c.Cookie(f.session)
	if err != nil {
		return ""
	}
	return ck.Value
}

// CheckCSRF reports whether a form post carries a valid token for this
// browser and its session and, when it names an Origin, comes from this
// server.
func (f *Frame) CheckCSRF(c echo.Context) bool {
	if o := c.Request().Header.Get("Origin"); o != "" && o != f.origin {
		return false
	}
	ck, err := c.Cookie(csrfCookie)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(c.FormValue(CSRFField)), []byte(f.csrfFor(ck.Value, f.sessionOf(c))))
}
