// Package ui is Visor's web UI for tenant members: the sign-in and consent
// pages of the authorization server and the operator dashboard. Pages are
// server-rendered html/template files embedded in the binary, share one
// layout and one message catalog (English and Japanese), and load nothing
// from another host. Every response carries a strict Content-Security-Policy
// with a per-response nonce; every form post carries a CSRF token.
//
// A Frame renders pages and guards forms; a Dashboard adds the member
// pages on top of it (dashboard.go). See docs/dashboard.md.
package ui

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/url"
	"path"
	"strings"

	"github.com/google/uuid"
)

//go:embed templates/*.html
var templateFiles embed.FS

// Preferences stores each member's language and time zone choices.
type Preferences interface {
	// MemberLanguage returns the member's stored language, "" when none.
	MemberLanguage(ctx context.Context, tenantID, memberID uuid.UUID) (string, error)
	// SetMemberLanguage stores the member's language.
	SetMemberLanguage(ctx context.Context, tenantID, memberID uuid.UUID, lang string) error
	// MemberTimeZone returns the member's time zone, "" when none.
	MemberTimeZone(ctx context.Context, tenantID, memberID uuid.UUID) (string, error)
	// SetMemberTimeZone stores the member's time zone; "" forgets it.
	SetMemberTimeZone(ctx context.Context, tenantID, memberID uuid.UUID, tz string) error
}

// FrameConfig configures a Frame.
type FrameConfig struct {
	BaseURL string // external base URL; https makes cookies Secure
	// Secret keys the CSRF tokens; at least 32 bytes, the same on every
	// replica.
	Secret []byte
	// SessionCookie names the member's session cookie, which every CSRF
	// token is bound to (auth/oauth.SessionCookieName); required.
	SessionCookie string
	// Preferences holds members' language choices; nil stores none.
	Preferences Preferences
	Logger      *slog.Logger
}

// Frame is the shared part of every page: templates, catalog, CSRF and
// the security headers.
type Frame struct {
	cat     *Catalog
	pages   map[string]*template.Template
	csrfKey []byte
	session string // the session cookie's name
	onceKey []byte // seals secrets shown once after a redirect
	secure  bool
	origin  string
	prefs   Preferences
	log     *slog.Logger
}

// NewFrame parses the embedded templates and the catalog.
func NewFrame(cfg FrameConfig) (*Frame, error) {
	if len(cfg.Secret) < 32 {
		return nil, errors.New("ui: the CSRF secret must be at least 32 bytes")
	}
	if cfg.SessionCookie == "" {
		return nil, errors.New("ui: name the session cookie the CSRF tokens are bound to")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("ui: base URL %q is not an absolute URL", cfg.BaseURL)
	}
	cat, err := LoadCatalog()
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256(append([]byte("visor ui csrf\x00"), cfg.Secret...))
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Frame{cat: cat, pages: pages, csrfKey: key[:], onceKey: onceKey(cfg.Secret), secure: u.Scheme == "https", origin: u.Scheme + "://" + u.Host,
		session: cfg.SessionCookie, prefs: cfg.Preferences, log: log}, nil
}

// Catalog returns the message catalog.
func (f *Frame) Catalog() *Catalog { return f.cat }

// parsePages parses each page template (every file but layout.html and
// the partials) with the layout and the partials: page "x" is
// templates/x.html, which defines "content" (and may define
// "title-extra"); a partial, templates/_y.html, defines blocks several
// pages share.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	shared := []string{"templates/layout.html"}
	for _, n := range names {
		if strings.HasPrefix(path.Base(n), "_") {
			shared = append(shared, n)
		}
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		t, err := template.New(base).ParseFS(templateFiles, append(shared, n)...)
		if err != nil {
			return nil, fmt.Errorf("ui: parse page %s: %w", base, err)
		}
		out[base] = t
	}
	return out, nil
}
