package server_test

import (
	"net"
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/web/server"
)

// TestClientAddressCannotBeForged shows X-Forwarded-For is ignored unless
// the peer is a configured trusted proxy, so a client cannot pick the
// address that rate limits and logs see.
func TestClientAddressCannotBeForged(t *testing.T) {
	t.Parallel()
	ip := func(e *echo.Echo) {
		e.GET("/ip", func(c echo.Context) error { return c.String(http.StatusOK, c.RealIP()) })
	}
	direct := start(t, server.Options{}, ip)
	_, body := get(t, direct.base+"/ip", "X-Forwarded-For", "203.0.113.7", "X-Real-IP", "203.0.113.8")
	require.Equal(t, "127.0.0.1", body, "a forged forwarding header was believed")

	_, loopback, err := net.ParseCIDR("127.0.0.0/8")
	require.NoError(t, err)
	proxied := start(t, server.Options{TrustedProxies: []*net.IPNet{loopback}}, ip)
	_, body = get(t, proxied.base+"/ip", "X-Forwarded-For", "203.0.113.7")
	require.Equal(t, "203.0.113.7", body, "a trusted proxy's forwarding header was ignored")
}
