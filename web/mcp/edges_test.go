package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/web/server"
)

// TestChunkedBodyOverTheLimitIs413: a body without Content-Length meets the
// server's limit only while it is read; it is still 413, not 400, whether
// the server's limit or the endpoint's is the smaller.
func TestChunkedBodyOverTheLimitIs413(t *testing.T) {
	f := newFixture(t)
	for _, limits := range [][2]int64{{16 << 10, 64 << 10}, {64 << 10, 16 << 10}, {32 << 10, 32 << 10}} {
		s := server.New(server.Options{Logger: slog.New(slog.DiscardHandler), BodyLimit: limits[0]})
		ep := New(tools.NewRegistry(), tools.NewSubjects(f.dir, tools.NoGrants{}, 0), f.audit, live.NoStreams{}, Options{MaxBodyBytes: limits[1]})
		ep.Register(s.Echo(), func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				c.SetRequest(c.Request().WithContext(identity.WithPrincipal(c.Request().Context(), f.tokens["op"])))
				return next(c)
			}
		})
		s.ChecksOwnBody(Route)
		srv := httptest.NewServer(s.Echo())
		body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 80<<10) + `"}}`
		for _, chunked := range []bool{true, false} {
			var rd io.Reader = strings.NewReader(body)
			if chunked {
				rd = io.MultiReader(rd) // hides the length: Transfer-Encoding: chunked
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/t/acme/mcp", rd)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "limits %v chunked %v", limits, chunked)
		}
		srv.Close()
	}
}

// TestUnknownMethodInALegacySessionIsMethodNotFound: the SDK answers a
// method it lacks with a plain-text 400 in a session; the endpoint answers
// JSON-RPC -32601 with the request's id, and accepts an unknown
// notification (never answered) with 202.
func TestUnknownMethodInALegacySessionIsMethodNotFound(t *testing.T) {
	f := newFixture(t)
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
		id := f.session(t, "emp", v)
		hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": v}
		r := f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":"q7","method":"tools/frobnicate","params":{}}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.Equal(t, "q7", r.msgs[0]["id"])
		e := r.rpcErr(t)
		require.EqualValues(t, -32601, e["code"])
		require.Contains(t, e["message"], "tools/frobnicate")

		r = f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","method":"notifications/frobnicated"}`)
		require.Equal(t, http.StatusAccepted, r.status, r.body)
		// The session still works, and a known method still reaches the SDK.
		r = f.rpc(t, "emp", hdr, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.NotNil(t, r.result(t))
	}
}

// TestEveryMethodTheEndpointPassesOnIsTheSDKs: the methods unknownMethod
// lets through are ones the SDK handles (it never answers them "not
// handled"), so the list cannot drift from the SDK unnoticed.
func TestEveryMethodTheEndpointPassesOnIsTheSDKs(t *testing.T) {
	f := newFixture(t)
	id := f.session(t, "emp", "2025-11-25")
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"}
	for m := range sdkMethods {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":%q,"params":{}}`, m)
		if strings.HasPrefix(m, "notifications/") {
			body = fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":{}}`, m)
		}
		r := f.rpc(t, "emp", hdr, body)
		require.NotContains(t, r.body, "not handled", m)
	}
}

// TestIntegerArgumentOutOfRangeIsAnInvalidArgument: an integer argument
// that does not fit int64, or is not integral, is an isError result naming
// the parameter; the tool never runs with the value dropped.
func TestIntegerArgumentOutOfRangeIsAnInvalidArgument(t *testing.T) {
	f := newFixture(t)
	var got []int64
	reg := tools.NewRegistry()
	reg.Register(tools.Tool{Name: "set_budget", Description: "x", Scope: identity.ScopeToolsRead,
		Params: []tools.Param{{Name: "budget_cents", Type: "integer", Description: "c"}},
		Handler: func(_ context.Context, c tools.Call) (*tools.Result, error) {
			n, ok := tools.Int(c.Args, "budget_cents")
			if ok {
				got = append(got, n)
			}
			return &tools.Result{Text: fmt.Sprintf("budget %d set=%v", n, ok)}, nil
		}})
	ep := New(reg, tools.NewSubjects(f.dir, tools.NoGrants{}, 0), f.audit, f.hub, Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep.ServeTenant(w, r.WithContext(identity.WithPrincipal(r.Context(), f.tokens["emp"])), "acme")
	}))
	defer srv.Close()
	f.url = srv.URL
	call := func(v string) map[string]any {
		return f.rpc(t, "emp", modernHeaders("tools/call", "set_budget"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"set_budget","arguments":{"budget_cents":`+v+`},`+modernMeta+`}}`).result(t)
	}
	for _, v := range []string{"1e300", "9223372036854775808", "12.5", "-1e19"} {
		res := call(v)
		require.Equal(t, true, res["isError"], v)
		text := res["content"].([]any)[0].(map[string]any)["text"].(string)
		require.Contains(t, text, "budget_cents", v)
		require.Contains(t, text, "integer", v)
	}
	require.Empty(t, got, "the tool ran")
	res := call("1.5e3")
	require.Nil(t, res["isError"])
	require.Equal(t, []int64{1500}, got)
}
