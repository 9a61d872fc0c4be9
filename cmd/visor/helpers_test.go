package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// lockedBuffer collects a command's output from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testEnv is the environment a command runs with in tests: services from
// the test setup, a free port, and nothing from the real environment.
func testEnv(t *testing.T, dbURL string, extra ...string) map[string]string {
	t.Helper()
	vars := map[string]string{
		"VISOR_DATABASE_URL": dbURL, "VISOR_REDIS_URL": redistest.URL(), "VISOR_HTTP_ADDR": "127.0.0.1:0",
		"VISOR_SHUTDOWN_TIMEOUT": "5s", "VISOR_DEV_DIR": t.TempDir(), "VISOR_LOG_LEVEL": "warn",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	return vars
}

type result struct {
	stdout, stderr string
	err            error
}

// runCmd runs one command to completion in-process.
func runCmd(t *testing.T, vars map[string]string, args ...string) result {
	t.Helper()
	var out, errb lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, args, &env{getenv: func(k string) string { return vars[k] }, stdout: &out, stderr: &errb})
	return result{out.String(), errb.String(), err}
}

// running is a long-running command (serve, dev) started in-process.
type running struct {
	base           string
	stdout, stderr *lockedBuffer
	stop           func() error
}

// startCmd starts a long-running command and waits until it listens.
func startCmd(t *testing.T, vars map[string]string, args ...string) *running {
	t.Helper()
	r := &running{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	addr := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	e := &env{getenv: func(k string) string { return vars[k] }, stdout: r.stdout, stderr: r.stderr,
		listening: func(a net.Addr) { addr <- a }}
	go func() { done <- run(ctx, args, e) }()
	var once sync.Once
	var stopErr error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(30 * time.Second):
				stopErr = fmt.Errorf("%v did not stop within 30s", args)
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = r.stop() })
	select {
	case a := <-addr:
		r.base = "http://localhost:" + strconv.Itoa(a.(*net.TCPAddr).Port)
	case err := <-done:
		t.Fatalf("%v exited before listening: %v\nstderr:\n%s", args, err, r.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%v did not start listening in 60s\nstderr:\n%s", args, r.stderr.String())
	}
	return r
}

func httpGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// emptyDatabase returns the URL of a database name that does not exist
// yet (create it with createDatabase, or let `visor dev` do it); it is
// dropped when the test ends.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "visor_cmd_" + hex.EncodeToString(b[:])
	admin := adminConn(t)
	admin.Close(context.Background())
	t.Cleanup(func() {
		c := adminConn(t)
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	cfg, err := pgx.ParseConfig(pgtest.AdminURL())
	require.NoError(t, err)
	rest := ""
	if i := strings.Index(pgtest.AdminURL(), "?"); i >= 0 {
		rest = pgtest.AdminURL()[i:]
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s%s", cfg.User, cfg.Host, cfg.Port, name, rest)
}

func createDatabase(t *testing.T, url string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	c := adminConn(t)
	defer c.Close(context.Background())
	_, err = c.Exec(context.Background(), "CREATE DATABASE "+cfg.Database)
	require.NoError(t, err)
}

func adminConn(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		pgtest.Unavailable(t, "Postgres", err)
	}
	return c
}

// needRedis skips or fails the test when Redis is not there.
func needRedis(t *testing.T) { redistest.New(t) }

// mcpTools lists the tools token sees at mcpURL (protocol 2026-07-28,
// one page).
func mcpTools(t *testing.T, mcpURL, token string) []string {
	t.Helper()
	const version = "2026-07-28"
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + version + `",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	req.Header.Set("Mcp-Method", "tools/list")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode, string(raw))
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"result"`) {
				raw = []byte(data)
			}
		}
	}
	var out struct {
		Result struct{ Tools []struct{ Name string } }
	}
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	names := make([]string, 0, len(out.Result.Tools))
	for _, tl := range out.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}
