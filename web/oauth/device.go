package oauth

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
)

// A device cookie marks a browser in which a member has signed in before.
// Failed sign-ins for that member from that browser count against the
// browser's own budget instead of the member's, so an outsider who guesses
// a member's password elsewhere, and spends the member's budget, does not
// lock the member out of a browser they already use.
const (
	deviceCookieName = "visor_device"
	deviceCookieTTL  = 90 * 24 * time.Hour
)

// knownDevice returns the nonce of the request's device cookie when it was
// issued to this browser for email in t.
func (s *Server) knownDevice(c echo.Context, t identity.Tenant, email string) (string, bool) {
	ck, err := c.Cookie(deviceCookieName)
	if err != nil {
		return "", false
	}
	nonce, mac, ok := strings.Cut(ck.Value, ".")
	if !ok || len(nonce) != 43 || !hmac.Equal([]byte(mac), []byte(s.core.DeviceMAC(t, email, nonce))) {
		return "", false
	}
	return nonce, true
}

// newNonce returns a device cookie's random nonce: 43 characters.
func newNonce() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// rememberDevice (re)issues the device cookie after email signed in to t.
func (s *Server) rememberDevice(c echo.Context, t identity.Tenant, email, nonce string) {
	if nonce == "" {
		nonce = newNonce()
	}
	c.SetCookie(&http.Cookie{Name: deviceCookieName, Value: nonce + "." + s.core.DeviceMAC(t, email, nonce), Path: "/t/" + t.Slug + "/",
		HttpOnly: true, Secure: s.secureCookies(), SameSite: http.SameSiteStrictMode, MaxAge: int(deviceCookieTTL / time.Second)})
}
