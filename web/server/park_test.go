package server_test

import (
	"bufio"
	"log/slog"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/server"
)

// TestParkedRequestWaitsAfterTheChain: a request the server lets park runs
// every middleware, the handler's wait runs once the chain has returned,
// still on the open response, and the request's log line (with the
// principal the inner middleware resolved) is written when the wait ends.
// A request the server does not let park waits in its handler.
func TestParkedRequestWaitsAfterTheChain(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	s := server.New(server.Options{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	s.ParkWhen(func(r *http.Request) bool { return r.Header.Get("X-Park") == "yes" })
	agent := uuid.New()
	chainDone := make(chan struct{}, 2)
	release := make(chan struct{})
	auth := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p := identity.Principal{TenantSlug: c.Param("tenant"), Kind: identity.KindEmployee, AgentID: agent}
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), p)))
			err := next(c)
			chainDone <- struct{}{}
			return err
		}
	}
	s.Echo().POST("/t/:tenant/hold", func(c echo.Context) error {
		res := c.Response()
		res.WriteHeader(http.StatusOK)
		_, _ = res.Write([]byte("held\n"))
		res.Flush()
		w := res.Writer
		wait := func() {
			<-release
			_, _ = w.Write([]byte("bye\n"))
		}
		if !server.Park(c.Request().Context(), wait) {
			_, _ = w.Write([]byte("in place\n"))
			wait()
		}
		return nil
	}, auth)
	f := serve(t, s)

	hold := func(park string) (*bufio.Reader, func()) {
		req, err := http.NewRequest(http.MethodPost, f.base+"/t/acme/hold", nil)
		require.NoError(t, err)
		req.Header.Set("X-Park", park)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		return bufio.NewReader(res.Body), func() { _ = res.Body.Close() }
	}

	br, closeBody := hold("yes")
	defer closeBody()
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)
	<-chainDone // the whole chain returned while the response is still open
	require.NotContains(t, logs.String(), `"route":"/t/:tenant/hold"`, "logged when the wait ends")
	close(release)
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "bye\n", line)
	_, err = br.ReadString('\n')
	require.Error(t, err, "the response ends with the wait, after its log line")
	entry := findLog(t, logs.String(), "/t/:tenant/hold")
	require.Equal(t, "agent:"+agent.String(), entry["principal"])
	require.EqualValues(t, 200, entry["status"])

	br, closeBody = hold("no")
	defer closeBody()
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "in place\n", line)
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "bye\n", line)
	<-chainDone
}
