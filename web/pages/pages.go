// Package pages holds Visor's server-rendered HTML pages (html/template):
// the OAuth sign-in, consent and error pages. Pages load no script and
// carry their one style block under a per-response CSP nonce.
package pages

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"
)

//go:embed *.html
var files embed.FS

var tmpl = template.Must(template.ParseFS(files, "*.html"))

// Page is what every page template receives.
type Page struct {
	Nonce  string // CSP nonce of the style block, set by Render
	Title  string
	Tenant string // tenant display name
	Data   any
}

// Render writes page name with status, a strict Content-Security-Policy
// and no caching. formTargets are extra origins a form on the page may
// lead to (the consent form redirects to the client).
func Render(w http.ResponseWriter, status int, name string, p Page, formTargets ...string) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	p.Nonce = base64.RawURLEncoding.EncodeToString(b[:])
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+p.Nonce+"'; img-src 'self'; "+
		"form-action 'self'"+strings.Join(prefixSpace(formTargets), "")+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

func prefixSpace(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = " " + x
	}
	return out
}
