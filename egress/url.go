package egress

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// maxURL bounds a URL that callers give.
const maxURL = 2000

// CheckURL is the save-time half of the guard, for every URL Visor stores
// to call later: it refuses a URL that is not absolute https (plain http
// only for a host on devHosts), carries credentials or a fragment, or
// names a destination that is not on the public internet — an IP literal
// that is not Public, localhost or a name under it, or a number-shaped host
// a resolver may read as an address — unless its host is on devHosts (an
// operator's development hosts, compared case-insensitively). Host names
// are checked again on every dial, after DNS (Client).
//
// It returns the URL normalized. Errors are fault.Invalid saying what is
// wrong; a refused destination also wraps ErrNotPublic.
func CheckURL(raw string, devHosts []string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || len(raw) > maxURL || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return "", fault.New(fault.Invalid, "must be an absolute https URL of at most %d bytes, without credentials or fragment", maxURL)
	}
	host := strings.ToLower(u.Hostname())
	dev := slices.ContainsFunc(devHosts, func(h string) bool { return strings.EqualFold(h, host) })
	if u.Scheme != "https" && (u.Scheme != "http" || !dev) {
		return "", fault.New(fault.Invalid, "must use https")
	}
	if dev {
		return u.String(), nil
	}
	if err := checkHost(host); err != nil {
		return "", err
	}
	return u.String(), nil
}

// checkHost refuses a URL's host (lower case, no brackets) that names a
// destination off the public internet.
func checkHost(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !Public(ip) {
			return fault.Newf(fault.Invalid, ErrNotPublic, "names a private or special address (%s); it must be reachable on the public internet", ip)
		}
		return nil
	}
	if localName(host) {
		return fault.Newf(fault.Invalid, ErrNotPublic, "names localhost; it must be reachable on the public internet")
	}
	// No top-level domain starts with a digit; a host whose last label
	// does ("2130706433", "0x7f.1", "127.1") is an address in a form some
	// resolvers accept, and browsers read as IPv4.
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if last := labels[len(labels)-1]; last == "" || (last[0] >= '0' && last[0] <= '9') {
		return fault.Newf(fault.Invalid, ErrNotPublic, "names an address in a non-standard form (%s); it must be reachable on the public internet", host)
	}
	return nil
}
