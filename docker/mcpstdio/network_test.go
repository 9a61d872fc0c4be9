package mcpstdio_test

import (
	"context"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker/mcpstdio"
	"github.com/visorhq/visor/services/upstreams"
)

// pins resolves the test's host names to fixed addresses.
type pins map[string]netip.Addr

func (p pins) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := p[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// TestStdioAllowHosts: a server whose allow_hosts name a host reaches it
// through the worker's egress proxy (the TLS handshake reaches the host),
// on an internal network; another host, even at the same address, plain
// http and an address by itself are refused.
func TestStdioAllowHosts(t *testing.T) {
	t.Parallel()
	image := fixtureImage(t)
	b, c := 1+mrand.IntN(250), 1+mrand.IntN(250)
	ip := netip.AddrFrom4([4]byte{127, byte(b), byte(c), 9})
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "443"))
	require.NoError(t, err)
	site := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	_ = site.Listener.Close()
	site.Listener = ln
	site.Config.ErrorLog = log.New(io.Discard, "", 0) // the fixture's refused handshakes
	site.StartTLS()
	t.Cleanup(site.Close)
	h := newHarness(t, []string{image}, time.Minute, func(c *mcpstdio.Config) {
		c.Resolver = pins{"allowed.test": ip, "other.test": ip}
		c.DevHosts = []string{"allowed.test", "other.test"}
	})
	ctx := context.Background()
	h.add(t, h.a, "net", image, fixtureCommand, func(in *upstreams.Input) { in.AllowHosts = []string{"allowed.test"} })
	sub := h.employee(h.a, h.agentA)
	fetch := func(url string) string {
		out, err := h.svc.Call(ctx, sub, "net:fetch", map[string]any{"url": url})
		require.NoError(t, err)
		return text(t, out.Result.Content)
	}
	require.Contains(t, fetch("https://allowed.test/"), "certificate", "the handshake reached the allowed host through the proxy")
	for _, u := range []string{"https://other.test/", "https://" + ip.String() + "/", "http://allowed.test/"} {
		got := fetch(u)
		require.NotContains(t, got, "certificate", "%s is refused at the proxy", u)
		// The proxy answers 403; Go dials a loopback address itself,
		// and the internal network has no route for it.
		require.Regexp(t, `403|Forbidden|connection refused|unreachable`, got, "%s is refused", u)
	}
	list := h.containers(t, h.a)
	require.Len(t, list, 1)
	info, err := h.m.Client().ContainerInspect(ctx, list[0].ID)
	require.NoError(t, err)
	require.NotEqual(t, "none", string(info.HostConfig.NetworkMode))
	nw, err := h.m.Client().NetworkInspect(ctx, string(info.HostConfig.NetworkMode), network.InspectOptions{})
	require.NoError(t, err)
	require.True(t, nw.Internal, "the server's network has no way out but the proxy")
}
