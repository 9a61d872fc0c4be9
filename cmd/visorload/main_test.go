package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// TestLoadAgainstARealServe runs the load tool briefly, with small counts,
// against a `visor serve` on real Postgres and Redis, and fails if any kind
// of request completed none or failed at all, if a listen stream was not
// held, or if no settings change reached a listen stream — so the tool
// cannot quietly stop measuring anything.
func TestLoadAgainstARealServe(t *testing.T) {
	url, operator := startServe(t)
	var out bytes.Buffer
	c, err := parse([]string{"-url", url, "-operator-key", operator, "-agents", "3", "-listen", "6",
		"-clients", "4", "-duration", "1500ms", "-mix", "list=50,call=30,settings=20", "-timeout", "60s"})
	require.NoError(t, err)
	s, err := load(context.Background(), c, &out)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	for _, k := range []string{"list", "call", "settings"} {
		require.NotEmptyf(t, s.visor.lat[k], "no %s request to Visor completed", k)
	}
	for _, k := range []string{"list", "call"} {
		require.NotEmptyf(t, s.bare.lat[k], "no %s request to the bare server completed", k)
	}
	require.Zero(t, s.visor.failed(), "errors from Visor")
	require.Zero(t, s.bare.failed(), "errors from the bare server")
	require.EqualValues(t, 6, s.listens, "listen streams acknowledged")
	require.Zero(t, s.listenFailed+s.listenEnded, "listen streams refused or ended")
	require.Positive(t, s.notifications, "no list_changed reached a listen stream")
	require.Contains(t, out.String(), "| list | ")
	require.Contains(t, out.String(), "visor req/s ÷ bare req/s")

	// The employees it created are in the trash afterwards.
	req, _ := http.NewRequest(http.MethodGet, strings.Replace(url, "/t/acme/mcp", "/api/v1/tenants/acme/agents", 1), nil)
	req.Header.Set("Authorization", "Bearer "+operator)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct {
		Agents []struct{ Name, Status string }
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list.Agents, 3)
	for _, a := range list.Agents {
		require.Equal(t, "trashed", a.Status, a.Name)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"", "-url must name"},
		{"-url http://x/mcp -keys k", "-url must name"},
		{"-url http://x/t/a/mcp", "-operator-key"},
		{"-url http://x/t/a/mcp -keys k", "settings changes need"},
		{"-url http://x/t/a/mcp -keys k -mix list=1,dance=2", `"dance=2"`},
		{"-url http://x/t/a/mcp -keys k -mix list=0", "every weight is zero"},
		{"-url http://x/t/a/mcp -keys k -mix list=1 -clients 0", "-clients must be at least 1"},
		{"-url http://x/t/a/mcp -keys k -mix list=1 -timeout 0s", "-timeout positive"},
	} {
		_, err := parse(strings.Fields(tc.args))
		require.ErrorContains(t, err, tc.want, tc.args)
	}
}

// startServe builds and starts `visor serve` on a fresh database and a
// private Redis, with a tenant acme and an operator key; it returns acme's
// MCP endpoint and the key.
func startServe(t *testing.T) (string, string) {
	t.Helper()
	dbURL := pgtest.NewURL(t)
	redis := redistest.StartServer(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	ids := identity.NewService(postgres.NewIdentityStore(db), changes.Discard{}, slog.New(slog.DiscardHandler))
	acme, err := ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	_, operator, err := ids.CreateKey(ctx, acme.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "ops",
		Scopes: []string{identity.ScopeAdminWrite, identity.ScopeToolsAdmin}})
	require.NoError(t, err)

	bin := filepath.Join(t.TempDir(), "visor")
	build := exec.Command("go", "build", "-o", bin, "github.com/visorhq/visor/cmd/visor")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build visor: %s", out)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	base := "http://" + addr
	var log bytes.Buffer
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "VISOR_DATABASE_URL="+dbURL, "VISOR_REDIS_URL="+redis.URL(),
		"VISOR_HTTP_ADDR="+addr, "VISOR_BASE_URL="+base, "VISOR_LOG_FORMAT=text", "VISOR_LOG_LEVEL=warn",
		"VISOR_SHUTDOWN_TIMEOUT=2s")
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("visor serve log:\n%s", log.String())
		}
	})
	testsignal.Until(t, 60*time.Second, 50*time.Millisecond, "visor serve healthy", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-exited:
			t.Fatalf("visor serve exited:\n%s", log.String())
		default:
		}
		return false
	})
	return fmt.Sprintf("%s/t/acme/mcp", base), operator
}
