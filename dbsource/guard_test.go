package dbsource

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
)

func TestParseAllow(t *testing.T) {
	t.Parallel()
	a, err := ParseAllow(" 10.20.0.0/16, 192.168.1.7 ,DB.internal,fd00::/8,")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("fd00::/8")}, a.Nets)
	require.Equal(t, []string{"db.internal"}, a.Hosts)
	for _, bad := range []string{"10.0.0.0/33", "*.internal", "a b", "db:5432"} {
		_, err := ParseAllow(bad)
		require.Error(t, err, bad)
	}
}

// TestGuardChecksTheAddressDialled: private and special addresses are
// refused unless an allowed network holds them; public ones pass.
func TestGuardChecksTheAddressDialled(t *testing.T) {
	t.Parallel()
	a, err := ParseAllow("10.20.0.0/16")
	require.NoError(t, err)
	for addr, ok := range map[string]bool{
		"10.20.3.4:5432": true, "8.8.8.8:5432": true, "[2001:4860:4860::8888]:5432": true,
		"10.21.0.1:5432": false, "127.0.0.1:5432": false, "[::1]:5432": false, "169.254.169.254:80": false,
		"100.64.0.1:5432": false, "192.168.0.1:3306": false, "0.0.0.0:5432": false, "[fc00::1]:5432": false,
		"[::ffff:127.0.0.1]:5432": false,
	} {
		err := a.check(addr)
		if ok {
			require.NoError(t, err, addr)
			continue
		}
		require.True(t, fault.Is(err, fault.Forbidden), "%s: %v", addr, err)
	}
}

// TestDialerRefusesBeforeConnecting: a listener on loopback is never
// reached without an allow entry, and is with one (by network or by the
// host's name).
func TestDialerRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx := context.Background()
	_, err = Allow{}.Dialer("127.0.0.1")(ctx, "tcp", l.Addr().String())
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	for _, a := range []Allow{{Nets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, {Hosts: []string{"localhost"}}} {
		host := "127.0.0.1"
		if len(a.Hosts) > 0 {
			host = "LocalHost"
		}
		c, err := a.Dialer(host)(ctx, "tcp", l.Addr().String())
		require.NoError(t, err, "%+v", a)
		c.Close()
	}
}
