package oauth

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// Redirect URIs follow OAuth 2.1 and RFC 8252 (native apps):
//
//   - https anywhere;
//   - http only on a loopback host (127.0.0.0/8, [::1], localhost), where
//     the port is not part of the match (RFC 8252 §7.3: a native app
//     listens on whatever port is free);
//   - private-use schemes (RFC 8252 §7.1) for public clients only: a
//     reverse domain name such as com.example.app, or one of the
//     single-word schemes that popular MCP clients registered before that
//     convention (appSchemes);
//
// and never a fragment or user info. Everything but a loopback port must
// match the registered URI exactly.

// appSchemes are single-word private-use schemes of desktop MCP clients.
// Any other private-use scheme must be a reverse domain name.
var appSchemes = []string{"cursor", "vscode", "vscode-insiders", "windsurf", "claude"}

// refusedSchemes are never a redirect target, whatever their shape: they
// run code, read local files or leave the app.
var refusedSchemes = []string{"javascript", "data", "file", "vbscript", "blob", "about", "filesystem", "view-source",
	"ws", "wss", "ftp", "mailto", "tel", "sms", "intent", "chrome", "chrome-extension", "moz-extension", "ms-browser-extension"}

var (
	schemeShape = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
)

// ValidRedirectURI checks one redirect URI of a client. public says whether
// the client is public (authenticates with "none"): only public clients,
// which are the native apps, may use private-use schemes.
func ValidRedirectURI(raw string, public bool) error {
	scheme, _, ok := strings.Cut(raw, ":")
	u, err := url.Parse(raw)
	if !ok || err != nil || len(raw) > maxURIBytes || strings.Contains(raw, "#") || u.User != nil {
		return fault.New(fault.Invalid, "redirect URI %q must be an absolute URI without fragment or user info", clip(raw))
	}
	switch scheme {
	case "https":
		if u.Host == "" {
			return fault.New(fault.Invalid, "redirect URI %q names no host", clip(raw))
		}
		return nil
	case "http":
		if u.Host == "" || !isLoopbackHost(u.Hostname()) {
			return fault.New(fault.Invalid, "redirect URI %q must use https, or http on a loopback address", clip(raw))
		}
		return nil
	}
	if err := checkPrivateScheme(scheme); err != nil {
		return err
	}
	if !public {
		return fault.New(fault.Invalid, "redirect URI %q uses a private-use scheme, which only public clients (token_endpoint_auth_method none) may register", clip(raw))
	}
	if u.Opaque == "" && u.Host == "" && strings.Trim(u.Path, "/") == "" {
		return fault.New(fault.Invalid, "redirect URI %q names no path after its scheme", clip(raw))
	}
	return nil
}

// checkPrivateScheme accepts a private-use scheme: well formed, not one
// that runs code or leaves the app, not an http lookalike, and either a
// reverse domain name or a known desktop client's scheme.
func checkPrivateScheme(scheme string) error {
	switch {
	case !schemeShape.MatchString(scheme):
		return fault.New(fault.Invalid, "redirect URI scheme %q is malformed (lower-case letters, digits, +, - and . after a letter)", clip(scheme))
	case slices.Contains(refusedSchemes, scheme):
		return fault.New(fault.Invalid, "redirect URI scheme %q is never allowed", scheme)
	case strings.HasPrefix(scheme, "http"):
		return fault.New(fault.Invalid, "redirect URI scheme %q looks like http(s) but is not; use https, or http on a loopback address", clip(scheme))
	case slices.Contains(appSchemes, scheme) || reverseDomain(scheme):
		return nil
	}
	return fault.New(fault.Invalid, "redirect URI scheme %q must be https, http on a loopback address, or a private-use scheme named by a reverse domain (com.example.app)", clip(scheme))
}

// reverseDomain reports whether scheme reads as a reversed domain name:
// two or more DNS labels separated by dots.
func reverseDomain(scheme string) bool {
	labels := strings.Split(scheme, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !dnsLabel.MatchString(l) {
			return false
		}
	}
	return true
}

// isLoopbackHost reports whether h is a loopback IP literal or "localhost".
// Browsers resolve localhost to the loopback interface themselves, and the
// MCP clients that use it (Claude Code, mcp-remote, the Inspector) register
// it, so it is treated like 127.0.0.1.
func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// MatchRedirect reports whether requested is one of registered: equal as
// strings, or, for http on a loopback host, equal in everything but the
// port.
func MatchRedirect(registered []string, requested string) bool {
	if slices.Contains(registered, requested) {
		return true
	}
	r, err := url.Parse(requested)
	if err != nil || r.Scheme != "http" || !isLoopbackHost(r.Hostname()) || ValidRedirectURI(requested, true) != nil {
		return false
	}
	return slices.ContainsFunc(registered, func(raw string) bool {
		g, err := url.Parse(raw)
		return err == nil && g.Scheme == "http" && g.Hostname() == r.Hostname() && g.User == nil &&
			httpPath(g) == httpPath(r) && g.RawQuery == r.RawQuery && g.ForceQuery == r.ForceQuery
	})
}

// httpPath is u's path, "/" when empty: the two are the same http URI.
func httpPath(u *url.URL) string {
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
