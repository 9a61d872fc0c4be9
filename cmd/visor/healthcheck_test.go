package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestHealthcheckProbesServeAndWorker runs `visor serve` and `visor worker`
// for real and probes each the way the compose file and a container
// HEALTHCHECK do: from the same environment, with no URL given. Once the
// process is gone the probe fails, so the exit status tells the truth.
func TestHealthcheckProbesServeAndWorker(t *testing.T) {
	t.Parallel()
	needRedis(t)
	dbURL := pgtest.NewURL(t)

	serve := startCmd(t, testEnv(t, dbURL), "serve")
	port := portOf(t, serve.base)
	vars := testEnv(t, dbURL, "VISOR_HTTP_ADDR", ":"+port) // all interfaces, as in a container
	for _, args := range [][]string{{"healthcheck"}, {"healthcheck", "-ready"}} {
		res := runCmd(t, vars, args...)
		require.NoError(t, res.err, "%v: %s", args, res.stderr)
		require.Equal(t, "ok\n", res.stdout)
	}
	require.NoError(t, serve.stop())
	res := runCmd(t, vars, "healthcheck", "-timeout", "2s")
	require.ErrorContains(t, res.err, "unhealthy: GET http://127.0.0.1:"+port+"/healthz")

	res = runCmd(t, testEnv(t, dbURL), "healthcheck", "-worker")
	require.ErrorContains(t, res.err, "VISOR_WORKER_HTTP_ADDR is not set")

	worker := startCmd(t, testEnv(t, dbURL, "VISOR_WORKER_HTTP_ADDR", "127.0.0.1:0"), "worker")
	wvars := testEnv(t, dbURL, "VISOR_WORKER_HTTP_ADDR", "127.0.0.1:"+portOf(t, worker.base))
	for _, args := range [][]string{{"healthcheck", "-worker"}, {"healthcheck", "-worker", "-ready"}} {
		res := runCmd(t, wvars, args...)
		require.NoError(t, res.err, "%v: %s", args, res.stderr)
	}
	require.NoError(t, worker.stop())
	require.ErrorContains(t, runCmd(t, wvars, "healthcheck", "-worker", "-timeout", "2s").err, "unhealthy")
}

// TestHealthcheckFailsOnAnythingButOK: a 503 from /readyz (a dependency
// down, or shutting down) or a redirect is unhealthy; bad flags are usage
// mistakes.
func TestHealthcheckFailsOnAnythingButOK(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://127.0.0.1:1/", http.StatusFound)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"status":"unavailable","checks":{"postgres":"down"}}`))
	}))
	defer srv.Close()

	require.NoError(t, runCmd(t, nil, "healthcheck", "-url", srv.URL+"/readyz").err)
	status = http.StatusServiceUnavailable
	res := runCmd(t, nil, "healthcheck", "-url", srv.URL+"/readyz")
	require.ErrorContains(t, res.err, "503 Service Unavailable")
	require.ErrorContains(t, runCmd(t, nil, "healthcheck", "-url", srv.URL+"/moved").err, "unhealthy")

	require.ErrorContains(t, runCmd(t, nil, "healthcheck", "-url", "ftp://x").err, "-url")
	require.ErrorIs(t, runCmd(t, nil, "healthcheck", "extra").err, errUsage)
	require.ErrorContains(t, runCmd(t, map[string]string{"VISOR_HTTP_ADDR": "127.0.0.1:0"}, "healthcheck").err, "port 0")
}

func portOf(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	return u.Port()
}
