package ui

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// A secret a form creates (a key's token) is shown with post-redirect-get:
// the post seals it into a short-lived cookie scoped to the page that
// shows it and redirects; that page's next load opens it and deletes the
// cookie. A reload then shows nothing and posts nothing, so it never
// creates a second secret, and the secret never sits in a URL or a cached
// page.
const (
	onceCookie = "visor_once"
	onceTTL    = 5 * time.Minute
)

// onceValue is what a sealed cookie carries: the secret and whose it is.
type onceValue struct {
	Tenant, Member, Object, Secret string
	Expires                        time.Time
}

func onceAEAD(key []byte) cipher.AEAD {
	block, _ := aes.NewCipher(key) // 32 bytes: cannot fail
	aead, _ := cipher.NewGCM(block)
	return aead
}

func onceKey(secret []byte) []byte {
	k := sha256.Sum256(append([]byte("visor ui once\x00"), secret...))
	return k[:]
}

// setOnce seals v into the cookie for the page at path.
func (f *Frame) setOnce(c echo.Context, path string, v onceValue) {
	v.Expires = time.Now().Add(onceTTL)
	plain, _ := json.Marshal(v)
	aead := onceAEAD(f.onceKey)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, plain, []byte(path))
	c.SetCookie(&http.Cookie{Name: onceCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: path,
		MaxAge: int(onceTTL / time.Second), HttpOnly: true, Secure: f.secure, SameSite: http.SameSiteStrictMode})
}

// takeOnce opens and deletes the page's sealed cookie; false when there
// is none, or it is not this member's, or it has expired.
func (f *Frame) takeOnce(c echo.Context, path, tenant, member string) (onceValue, bool) {
	ck, err := c.Cookie(onceCookie)
	if err != nil {
		return onceValue{}, false
	}
	c.SetCookie(&http.Cookie{Name: onceCookie, Value: "", Path: path, MaxAge: -1, HttpOnly: true, Secure: f.secure, SameSite: http.SameSiteStrictMode})
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	aead := onceAEAD(f.onceKey)
	if err != nil || len(raw) < aead.NonceSize() {
		return onceValue{}, false
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(path))
	var v onceValue
	if err != nil || json.Unmarshal(plain, &v) != nil || v.Tenant != tenant || v.Member != member || time.Now().After(v.Expires) {
		return onceValue{}, false
	}
	return v, true
}
