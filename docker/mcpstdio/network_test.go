package mcpstdio_test

import (
	"context"
	"encoding/json"
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
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker/mcpstdio"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/upstream"
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
		// The engine's default runtime: where tests run sandboxes under
		// gVisor, runsc is registered with its networking off (see
		// .ci/run), and a container under it has no route to anything.
		c.Runtime = ""
	})
	ctx := context.Background()
	h.add(t, h.a, "net", image, fixtureCommand, func(in *upstreams.Input) { in.AllowHosts = []string{"allowed.test"} })
	sub := h.employee(h.a, h.agentA)
	fetch := func(url string) string {
		out, err := h.svc.Call(ctx, sub, "net:fetch", map[string]any{"url": url})
		require.NoError(t, err)
		return text(t, out.Result.Content)
	}
	got := fetch("https://allowed.test/")
	require.Contains(t, got, "certificate", "the handshake reached the allowed host through the proxy")
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

// TestStdioWorkerConcurrencyLimit: the worker runs at most a server's
// max_concurrent calls at once, whichever replica sent them; one more is
// refused at once, and a slot frees when a call ends.
func TestStdioWorkerConcurrencyLimit(t *testing.T) {
	t.Parallel()
	image := fixtureImage(t)
	h := newHarness(t, []string{image}, time.Minute)
	spec := upstream.StdioSpec{Server: uuid.New(), Name: "busy", Version: 1, Image: image, Command: fixtureCommand, MaxConcurrent: 2}
	tenant := h.a.ID
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := h.m.Call(ctx, tenant, spec, "wait", json.RawMessage(`{}`))
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return h.m.InFlight(tenant, spec.Server) == 2 }, 60*time.Second, 20*time.Millisecond,
		"both waits run")
	_, err := h.m.Call(context.Background(), tenant, spec, "echo", json.RawMessage(`{"text":"x"}`))
	require.True(t, fault.Is(err, fault.RateLimited), "a third call is refused at once: %v", err)
	require.Contains(t, fault.Message(err), "limit of 2 calls")
	cancel() // the waits end, cancelled
	require.Error(t, <-done)
	require.Error(t, <-done)
	res, err := h.m.Call(context.Background(), tenant, spec, "echo", json.RawMessage(`{"text":"x"}`))
	require.NoError(t, err)
	require.Contains(t, string(res.Content), "echo: x")
}
