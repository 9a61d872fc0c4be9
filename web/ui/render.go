package ui

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"
)

// Render writes page (templates/<page>.html in the layout) with status,
// the security headers and no caching. v.Lang, when empty, is the
// request's (the language cookie, else Accept-Language). formTargets are
// extra origins a form on the page may lead to (the consent form
// redirects to the client).
func (f *Frame) Render(c echo.Context, status int, page string, v *View, formTargets ...string) error {
	t, ok := f.pages[page]
	if !ok {
		return fmt.Errorf("ui: no page %q", page)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	v.Nonce = base64.RawURLEncoding.EncodeToString(b[:])
	v.cat = f.cat
	if !v.Lang.Valid() {
		v.Lang = requestLang(c.Request(), "")
	}
	v.CSRF = f.csrfToken(c)
	if v.Path == "" {
		v.Path = c.Request().URL.RequestURI()
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("ui: render %s: %w", page, err)
	}
	h := c.Response().Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp(v.Nonce, formTargets))
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // "no-referrer" makes Chromium send Origin: null on the page's own form posts
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Language", string(v.Lang))
	h.Add("Vary", "Accept-Language, Cookie")
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(buf.Bytes())
	return err
}

// csp is the policy of every page: nothing but this server's own forms,
// the page's own nonced style and script elements, same-origin images and
// connections (a live tail), and no framing.
func csp(nonce string, formTargets []string) string {
	var extra strings.Builder
	for _, t := range formTargets {
		extra.WriteString(" " + t)
	}
	return "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'nonce-" + nonce + "'; img-src 'self'; " +
		"connect-src 'self'; form-action 'self'" + extra.String() + "; frame-ancestors 'none'; base-uri 'none'"
}
