package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/storage/redisx/redistest"
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

// TestHealthcheckIsADockerHealthcheckWithoutAShell runs `visor serve` in an
// image holding nothing but the static binary (no shell, no curl, as
// distroless), with `visor healthcheck` as its Docker HEALTHCHECK, and
// waits for Docker to report the container healthy.
func TestHealthcheckIsADockerHealthcheckWithoutAShell(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		pgtest.Unavailable(t, "Docker Engine", firstLine(string(out), err))
	}
	needRedis(t)
	dbURL := pgtest.NewURL(t)
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, "visor"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(`FROM scratch
COPY visor /usr/local/bin/visor
USER 65532:65532
HEALTHCHECK --interval=1s --timeout=5s --retries=3 CMD ["/usr/local/bin/visor", "healthcheck", "-ready"]
ENTRYPOINT ["/usr/local/bin/visor"]
`), 0o644))
	tag := "visor-healthcheck-test:" + randSuffix()
	out, err = exec.CommandContext(ctx, "docker", "build", "-q", "-t", tag, dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })

	// The host's network, so the container reaches the test's Postgres and
	// Redis on the loopback interface.
	addr := "127.0.0.1:" + freePort(t)
	out, err = exec.CommandContext(ctx, "docker", "run", "-d", "--network", "host",
		"-e", "VISOR_DATABASE_URL="+dbURL, "-e", "VISOR_REDIS_URL="+redistest.URL(), "-e", "VISOR_HTTP_ADDR="+addr,
		"-e", "VISOR_LOG_LEVEL=warn", tag, "serve").CombinedOutput()
	require.NoError(t, err, "%s", out)
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })

	status := ""
	require.Eventually(t, func() bool {
		out, err := exec.Command("docker", "inspect", "-f", "{{.State.Health.Status}}", id).CombinedOutput()
		status = strings.TrimSpace(string(out))
		return err == nil && status == "healthy"
	}, 90*time.Second, 500*time.Millisecond, "Docker never saw the container healthy (last: %s)", status)
}
