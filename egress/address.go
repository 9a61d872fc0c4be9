package egress

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// ErrNotPublic is wrapped by every refusal of a destination (an address,
// or a host name such as localhost) that is not on the public internet, so
// a caller that maps it to its own code tells it from a malformed URL.
var ErrNotPublic = fmt.Errorf("not a public address")

// refused lists the special-purpose ranges of the IANA IPv4 and IPv6
// registries that must never be dialled: none of them is an ordinary host
// on the public internet, and several reach Visor's own network (NAT64 and
// 6to4 embed an IPv4 address that may be private). IPv6 outside 2000::/3
// is refused wholesale (IPv4-compatible forms included) before this list is
// read; IPv4-mapped forms are unmapped first.
var refused = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),         // "this network"
	netip.MustParsePrefix("10.0.0.0/8"),        // private
	netip.MustParsePrefix("100.64.0.0/10"),     // carrier-grade NAT
	netip.MustParsePrefix("127.0.0.0/8"),       // loopback
	netip.MustParsePrefix("169.254.0.0/16"),    // link-local (metadata services)
	netip.MustParsePrefix("172.16.0.0/12"),     // private
	netip.MustParsePrefix("192.0.0.0/24"),      // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),      // documentation
	netip.MustParsePrefix("192.31.196.0/24"),   // AS112
	netip.MustParsePrefix("192.52.193.0/24"),   // AMT
	netip.MustParsePrefix("192.88.99.0/24"),    // 6to4 relay anycast
	netip.MustParsePrefix("192.168.0.0/16"),    // private
	netip.MustParsePrefix("192.175.48.0/24"),   // AS112 direct delegation
	netip.MustParsePrefix("198.18.0.0/15"),     // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"),   // documentation
	netip.MustParsePrefix("203.0.113.0/24"),    // documentation
	netip.MustParsePrefix("224.0.0.0/4"),       // multicast
	netip.MustParsePrefix("240.0.0.0/4"),       // reserved, broadcast included
	netip.MustParsePrefix("64:ff9b::/96"),      // NAT64 can reach private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),    // local-use NAT64 likewise
	netip.MustParsePrefix("100::/64"),          // discard-only
	netip.MustParsePrefix("2001::/23"),         // IETF protocol assignments (Teredo, benchmarking, ORCHID)
	netip.MustParsePrefix("2001:db8::/32"),     // documentation
	netip.MustParsePrefix("2002::/16"),         // 6to4 embeds any IPv4
	netip.MustParsePrefix("2620:4f:8000::/48"), // AS112
	netip.MustParsePrefix("3fff::/20"),         // documentation
	netip.MustParsePrefix("5f00::/16"),         // segment routing SIDs
	netip.MustParsePrefix("fc00::/7"),          // unique local
	netip.MustParsePrefix("fe80::/10"),         // link-local
	netip.MustParsePrefix("ff00::/8"),          // multicast
}

// globalIPv6 is the only IPv6 space allocated for global unicast; the rest
// (::/128, ::1, IPv4-compatible ::a.b.c.d, and unallocated space) is never
// a public host.
var globalIPv6 = netip.MustParsePrefix("2000::/3")

// Public reports whether ip is an ordinary address on the public internet:
// none of the refused special-purpose ranges, in any IPv6 form.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || (ip.Is6() && !globalIPv6.Contains(ip)) {
		return false
	}
	for _, p := range refused {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// CheckPublic refuses an "ip:port" address that is not Public, with a
// fault.Forbidden error wrapping ErrNotPublic. It is the check a Client
// runs on every address it dials.
func CheckPublic(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unparseable address %q", address)
	}
	if !Public(ap.Addr()) {
		return fault.Newf(fault.Forbidden, ErrNotPublic, "the host resolves to a non-public address")
	}
	return nil
}

// localName reports whether host (lower case) is localhost or under it:
// resolvers answer those with loopback without asking DNS.
func localName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
