package mcp

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// originAllowed accepts a request without an Origin (not a browser), one
// whose Origin is on the allow list, and one whose Origin names the host the
// request was sent to (ports aside; the loopback names count as one host).
// Anything else is a cross-site or DNS-rebinding attempt.
func (h *Handler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if slices.Contains(h.opts.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return sameHost(u.Hostname(), hostOnly(r.Host))
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func sameHost(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	return a == b || (loopback(a) && loopback(b))
}

func loopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
