package egressproxy

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPinKeepsOnlyPublicAddressesOffTheDevelopmentList: an allowed domain
// whose DNS answers with a private, metadata or NAT64 address is not
// reachable through the session's proxy (it is reported as unpinned),
// while a development host keeps its private pin.
func TestPinKeepsOnlyPublicAddressesOffTheDevelopmentList(t *testing.T) {
	t.Parallel()
	dns := &mapResolver{m: map[string]netip.Addr{
		"shop.example":     netip.MustParseAddr("93.184.215.14"),
		"intranet.example": netip.MustParseAddr("10.0.0.5"),
		"meta.example":     netip.MustParseAddr("169.254.169.254"),
		"nat64.example":    netip.MustParseAddr("64:ff9b::a00:1"),
		"cgnat.example":    netip.MustParseAddr("100.64.1.1"),
		"shop.test":        netip.MustParseAddr("127.0.0.2"),
	}}
	allowed := []string{"shop.example", "intranet.example", "meta.example", "nat64.example", "cgnat.example", "shop.test", "gone.example"}
	pinned, failed := Pin(t.Context(), dns, allowed, []string{"shop.test"})
	require.Equal(t, map[string][]netip.Addr{
		"shop.example": {netip.MustParseAddr("93.184.215.14")},
		"shop.test":    {netip.MustParseAddr("127.0.0.2")},
	}, pinned)
	require.ElementsMatch(t, []string{"intranet.example", "meta.example", "nat64.example", "cgnat.example", "gone.example"}, failed)
}

type mapResolver struct{ m map[string]netip.Addr }

func (r *mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r.m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{a}, nil
}
