package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
)

// TestSIGTERMShutsDownGracefully runs the real binary: a request in flight
// when SIGTERM arrives still completes, and the process exits 0 after
// logging its orderly shutdown.
func TestSIGTERMShutsDownGracefully(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := emptyMigrated(t)
	// The test binary runs main() itself when asked (see TestMain).
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "VISOR_DATABASE_URL="+url, "VISOR_REDIS_URL=redis://127.0.0.1:6379/0",
		"VISOR_HTTP_ADDR=127.0.0.1:0", "VISOR_SHUTDOWN_TIMEOUT=10s")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var addr string
	addrRE := regexp.MustCompile(`"msg":"http server listening","addr":"([^"]+)"`)
	var logs []string
	deadline := time.After(30 * time.Second)
	for addr == "" {
		select {
		case l := <-lines:
			logs = append(logs, l)
			if m := addrRE.FindStringSubmatch(l); m != nil {
				addr = m[1]
			}
		case <-deadline:
			t.Fatalf("serve did not start:\n%s", strings.Join(logs, "\n"))
		}
	}
	code, _ := httpGet(t, "http://"+addr+"/readyz", "")
	require.Equal(t, 200, code)

	// Hold a connection with a request whose body arrives slowly, so it is
	// in flight when the signal lands: the server's count of open
	// connections (read over a connection of its own, kept open) says when
	// the request's connection is there.
	metricsClient := &http.Client{Transport: &http.Transport{}}
	conns := func() float64 {
		res, err := metricsClient.Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "visor_http_connections "); ok {
				n, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err)
				return n
			}
		}
		t.Fatal("no visor_http_connections in /metrics")
		return 0
	}
	before := conns()
	pr, pw := newSlowBody()
	done := make(chan int, 1)
	go func() {
		client := &http.Client{Transport: &http.Transport{}} // a connection of its own
		res, err := client.Post("http://"+addr+"/api/v1/tenants", "application/json", pr)
		if err != nil {
			done <- -1
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	testsignal.Until(t, 30*time.Second, 10*time.Millisecond, "the request's connection open", func() bool { return conns() > before })
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	// The body follows once the server says it is shutting down.
	for !strings.Contains(strings.Join(logs, "\n"), "http server shutting down") {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "serve exited before it logged its shutdown:\n%s", strings.Join(logs, "\n"))
			logs = append(logs, l)
		case <-time.After(30 * time.Second):
			t.Fatalf("serve did not log its shutdown:\n%s", strings.Join(logs, "\n"))
		}
	}
	_, _ = pw.Write([]byte(`{"slug":"x","name":"y"}`))
	pw.Close()
	require.Equal(t, 401, <-done, "the in-flight request got its answer (no credential)")

	for l := range lines {
		logs = append(logs, l)
	}
	require.NoError(t, cmd.Wait(), "exit status 0 after SIGTERM")
	all := strings.Join(logs, "\n")
	require.Contains(t, all, "http server shutting down")
	require.Contains(t, all, "http server stopped")
	require.NotContains(t, all, "goroutine ")
}

// runMainEnv makes the test binary behave as the visor binary.
const runMainEnv = "VISOR_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newSlowBody() (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	return r, w
}
