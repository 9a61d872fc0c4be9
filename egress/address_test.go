package egress_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
)

// TestPublicRefusesEverySpecialPurposeRange: the first and last address of
// each refused range, and the IPv4-mapped and -compatible forms of the
// IPv4 ones, are not Public; ordinary hosts are.
func TestPublicRefusesEverySpecialPurposeRange(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24",
		"192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
		"2001:db8::/32", "2002::/16", "2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7",
		"fe80::/10", "fec0::/10", "ff00::/8",
	} {
		prefix := netip.MustParsePrefix(p)
		for _, ip := range []netip.Addr{prefix.Addr(), last(prefix)} {
			require.False(t, egress.Public(ip), "%s (%s)", ip, p)
			require.Error(t, egress.CheckPublic(netip.AddrPortFrom(ip, 443).String()), "%s", ip)
			if ip.Is4() {
				mapped := netip.AddrFrom16(ip.As16())
				require.False(t, egress.Public(mapped), "mapped %s", mapped)
				b := ip.As4()
				compat := netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]})
				require.False(t, egress.Public(compat), "compatible %s", compat)
			}
		}
	}
	for _, s := range []string{"1.1.1.1", "8.8.8.8", "93.184.215.14", "100.63.255.255", "100.128.0.0",
		"198.17.255.255", "198.20.0.0", "2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8"} {
		ip := netip.MustParseAddr(s)
		require.True(t, egress.Public(ip), s)
		require.NoError(t, egress.CheckPublic(netip.AddrPortFrom(ip, 443).String()), s)
	}
	err := egress.CheckPublic("[fe80::1%eth0]:443")
	require.True(t, fault.Is(err, fault.Forbidden), "a zoned link-local address: %v", err)
}

// last returns the highest address of p.
func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// FuzzPublic: an address and its IPv4-mapped form always agree, and no
// address the standard library calls loopback, private, link-local,
// multicast or unspecified is ever Public.
func FuzzPublic(f *testing.F) {
	f.Add([]byte{10, 0, 0, 1})
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
	f.Fuzz(func(t *testing.T, raw []byte) {
		ip, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		pub := egress.Public(ip)
		if ip.Is4() && pub != egress.Public(netip.AddrFrom16(ip.As16())) {
			t.Fatalf("%s and its mapped form disagree", ip)
		}
		u := ip.Unmap()
		if pub && (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsLinkLocalMulticast() ||
			u.IsMulticast() || u.IsUnspecified() || !u.IsGlobalUnicast()) {
			t.Fatalf("%s is Public", ip)
		}
	})
}
