package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/web/server"
)

// TestConnectionCapClosesTheExcess: with MaxConns held open, the next
// connection is closed as soon as it is accepted (and counted); once one
// closes, a new connection is served again.
func TestConnectionCapClosesTheExcess(t *testing.T) {
	t.Parallel()
	f := start(t, server.Options{MaxConns: 2}, nil)
	addr := strings.TrimPrefix(f.base, "http://")
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	healthz := func(c net.Conn) (string, error) {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return "", err
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		return res.Status, nil
	}
	first, second := dial(), dial()
	status, err := healthz(first)
	require.NoError(t, err)
	require.Equal(t, "200 OK", status)
	status, err = healthz(second)
	require.NoError(t, err)
	require.Equal(t, "200 OK", status)

	_, err = healthz(dial())
	require.Error(t, err, "the third connection is closed")
	first.Close()
	var metrics string
	require.Eventually(t, func() bool {
		res, err := http.Get(f.base + "/metrics")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		metrics = string(b)
		return res.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond, "a closed connection frees its place")
	require.Regexp(t, `(?m)^visor_http_connections_refused_total [1-9]`, metrics)
	require.Regexp(t, `(?m)^visor_http_connections 2$`, metrics)
}

// TestAddCheckJoinsReadiness: a check added after New fails /readyz while
// /healthz keeps answering.
func TestAddCheckJoinsReadiness(t *testing.T) {
	t.Parallel()
	s := server.New(server.Options{Addr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	s.AddCheck(server.Check{Name: "streams", Fn: func(context.Context) error { return errors.New("full") }})
	f := serve(t, s)
	res, body := get(t, f.base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.JSONEq(t, `{"status":"unavailable","checks":{"streams":"unavailable"}}`, body)
	res, _ = get(t, f.base+"/healthz")
	require.Equal(t, http.StatusOK, res.StatusCode)
}
