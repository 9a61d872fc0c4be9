package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/web/server"
)

// smallBuffers accepts connections with a small send buffer, so that the
// server's writes to a client that stopped reading block after a few KiB
// instead of megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

type noVersions struct{}

func (noVersions) PolicyVersions(context.Context, []uuid.UUID) (map[uuid.UUID]int64, error) {
	return nil, nil
}

// stallRig is the endpoint with a real live hub behind a real HTTP server
// on TCP, and a policy whose visible set flips on every change.
type stallRig struct {
	*fixture
	hub   *live.Hub
	srv   *http.Server
	ep    *Handler
	addr  string
	flips atomic.Int64
}

func newStallRig(t *testing.T, notifyTimeout time.Duration) *stallRig {
	t.Helper()
	f := newFixture(t) // tokens and directory
	r := &stallRig{fixture: f}
	visible := func(context.Context, identity.Principal) ([]string, error) {
		if r.flips.Load()%2 == 0 {
			return []string{"agent_status"}, nil
		}
		return []string{"agent_status", "plain_write"}, nil
	}
	r.hub = live.NewHub(live.Config{Visible: visible, Versions: noVersions{}, ReconcileEvery: time.Hour, NotifyTimeout: notifyTimeout})
	require.NoError(t, r.hub.Start(context.Background()))
	t.Cleanup(r.hub.Stop)
	reg := tools.NewRegistry()
	reg.Register(tools.Tool{Name: "agent_status", Description: "x", Scope: identity.ScopeToolsRead, Handler: echoTool})
	r.ep = New(reg, tools.NewSubjects(f.dir, tools.NoGrants{}, 0), f.audit, r.hub, Options{})
	// Served as a replica serves it: listen streams wait outside the
	// middleware chain (server.Park).
	s := server.New(server.Options{Logger: slog.New(slog.DiscardHandler)})
	s.ChecksOwnBody(Route)
	s.ParkWhen(MayPark)
	e := s.Echo()
	r.ep.Register(e, func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := f.tokens[strings.TrimPrefix(c.Request().Header.Get("Authorization"), "Bearer ")]
			if !ok {
				return c.NoContent(http.StatusUnauthorized)
			}
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), p)))
			return next(c)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r.srv = &http.Server{Handler: s}
	r.srv.RegisterOnShutdown(r.ep.Close)
	go func() { _ = r.srv.Serve(smallBuffers{ln}) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	r.addr = ln.Addr().String()
	f.url = "http://" + r.addr + "/t/acme/mcp"
	return r
}

// change flips the visible set of every caller of the tenant.
func (r *stallRig) change() {
	r.flips.Add(1)
	r.hub.Handle(changes.Event{TenantID: r.dir.tenant.ID, Kind: changes.AgentChanged})
}

// stalled sends a request on a raw TCP connection with a small receive
// buffer and never reads the answer.
func (r *stallRig) stalled(t *testing.T, request string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", r.addr)
	require.NoError(t, err)
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Write([]byte(request))
	require.NoError(t, err)
	return c
}

func listenRequest(host, token string) string {
	body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	return "POST /t/acme/mcp HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n" +
		"Mcp-Method: subscriptions/listen\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
}

func legacyGetRequest(host, token, session string) string {
	return "GET /t/acme/mcp HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + token +
		"\r\nAccept: text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: " + session + "\r\n\r\n"
}

// healthyListen opens a listen stream that reads everything it is sent.
func (r *stallRig) healthyListen(t *testing.T, token string) chan string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"H","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url, strings.NewReader(body))
	for k, v := range modernHeaders("subscriptions/listen", "") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	events := make(chan string, 1<<14)
	go readEvents(res, events)
	require.Contains(t, <-events, "acknowledged")
	return events
}

func (r *stallRig) streams() int { return r.hub.Stats().Streams }

// TestAStalledClientStallsNobodyElse: clients that stopped reading (a
// listen stream and a legacy GET stream, on real TCP connections whose
// buffers fill up) are dropped once a notification cannot be written
// within NotifyTimeout, while a client that reads hears every change
// promptly throughout.
func TestAStalledClientStallsNobodyElse(t *testing.T) {
	r := newStallRig(t, 300*time.Millisecond)
	healthy := r.healthyListen(t, "op")
	r.stalled(t, listenRequest(r.addr, "op2"))
	session := r.session(t, "emp", "2025-11-25")
	r.stalled(t, legacyGetRequest(r.addr, "emp", session))
	require.Eventually(t, func() bool { return r.streams() == 3 }, 5*time.Second, 10*time.Millisecond)

	deadline := time.Now().Add(30 * time.Second)
	for i := 0; r.streams() > 1; i++ {
		require.True(t, time.Now().Before(deadline), "the stalled streams were never dropped: %+v", r.hub.Stats())
		r.change()
		select {
		case ev := <-healthy:
			require.Contains(t, ev, "notifications/tools/list_changed")
		case <-time.After(5 * time.Second):
			t.Fatalf("change %d: the reading client heard nothing while others stalled", i)
		}
	}
	// Both stalled streams are gone. (Stats.Dropped counts the failed
	// writes the hub saw; a stream whose connection net/http found broken
	// first ends on its own, uncounted.)
	for range 10 {
		r.change()
		select {
		case ev := <-healthy:
			require.Contains(t, ev, "notifications/tools/list_changed")
		case <-time.After(5 * time.Second):
			t.Fatal("the reading client stopped hearing changes")
		}
	}
}

// TestShutdownFinishesWhileClientsStoppedReading: with notifications stuck
// in writes to clients that stopped reading (and a NotifyTimeout far longer
// than the shutdown allows), the HTTP server's graceful shutdown still
// finishes within its timeout, and the hub stops at once.
func TestShutdownFinishesWhileClientsStoppedReading(t *testing.T) {
	r := newStallRig(t, time.Hour)
	for _, token := range []string{"op", "op2", "emp"} {
		r.stalled(t, listenRequest(r.addr, token))
	}
	session := r.session(t, "emp", "2025-11-25")
	r.stalled(t, legacyGetRequest(r.addr, "emp", session))
	healthy := r.healthyListen(t, "op")
	require.Eventually(t, func() bool { return r.streams() == 5 }, 5*time.Second, 10*time.Millisecond)
	// Change until every stalled connection is full: then a change is
	// written to the reading client only.
	for i, quiet := 0, 0; quiet < 20; i++ {
		require.Less(t, i, 5000, "the stalled connections never filled up")
		before := r.hub.Stats().Notified
		r.change()
		select {
		case <-healthy:
		case <-time.After(5 * time.Second):
			t.Fatalf("change %d: the reading client heard nothing", i)
		}
		// Sleep, not a signal: the writes to the stalled clients never
		// finish (that is the point), so the hub never goes idle; this
		// lets the ones that can end land before the count is read.
		time.Sleep(2 * time.Millisecond)
		if r.hub.Stats().Notified-before == 1 {
			quiet++
		} else {
			quiet = 0
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.srv.Shutdown(ctx), "the graceful shutdown did not finish within its timeout")
	stopped := make(chan struct{})
	go func() { r.hub.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Hub.Stop waits for writes to clients that stopped reading")
	}
}
