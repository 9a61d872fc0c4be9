package computer

import (
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// CheckURL checks a URL computer_navigate may open and returns its host:
// https only, a host exactly on allowed (no wildcard, no subdomain match),
// port absent or 443, no user name or password, at most MaxURLBytes. With an
// empty allowlist every URL is refused: such a session has no network.
//
// It is the first of two checks: the session's egress proxy refuses any
// connection to a host it did not pin at session start, whatever the page
// asks for.
func CheckURL(raw string, allowed []string) (string, error) {
	if len(allowed) == 0 {
		return "", fault.New(fault.Forbidden, "navigation is refused: this AI employee has no computer_use_config.allowed_domains, so its sessions have no network")
	}
	if len(raw) > MaxURLBytes {
		return "", fault.New(fault.Invalid, "url must be at most %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "", fault.New(fault.Invalid, "url must be an absolute https:// URL")
	}
	if u.Scheme != "https" {
		return "", fault.New(fault.Forbidden, "navigation is refused: only https:// URLs may be opened")
	}
	if u.User != nil {
		return "", fault.New(fault.Forbidden, "navigation is refused: a URL may not carry a user name or password")
	}
	if p := u.Port(); p != "" && p != "443" {
		return "", fault.New(fault.Forbidden, "navigation is refused: only port 443 may be used")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" || net.ParseIP(host) != nil {
		return "", fault.New(fault.Forbidden, "navigation is refused: the URL must name a host on allowed_domains, not an IP address")
	}
	if !slices.Contains(NormalizeDomains(allowed), host) {
		return "", fault.New(fault.Forbidden, "navigation is refused: %s is not on this AI employee's allowed_domains (%s)", host, strings.Join(allowed, ", "))
	}
	return host, nil
}

// NormalizeDomains returns the allowlist lower-cased, without a trailing dot
// and without entries that are not plain host names (IP literals, ports,
// wildcards), which never match.
func NormalizeDomains(allowed []string) []string {
	out := make([]string, 0, len(allowed))
	for _, d := range allowed {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if d == "" || net.ParseIP(d) != nil || strings.ContainsAny(d, ":/*@ ") {
			continue
		}
		out = append(out, d)
	}
	return out
}
