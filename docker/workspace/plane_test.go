package workspace_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	domain "github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// redisMonitor records every command the Redis server runs (MONITOR), as
// the raw text of its arguments.
type redisMonitor struct {
	mu  sync.Mutex
	buf strings.Builder
}

func monitorRedis(t *testing.T) *redisMonitor {
	t.Helper()
	u, err := url.Parse(redistest.URL())
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	r := bufio.NewReaderSize(conn, 1<<20)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", line)
	mon := &redisMonitor{}
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			mon.mu.Lock()
			mon.buf.WriteString(line)
			mon.mu.Unlock()
		}
	}()
	return mon
}

// waitFor waits until the monitor saw s (MONITOR lines arrive after the
// commands ran).
func (m *redisMonitor) waitFor(t *testing.T, s string) string {
	t.Helper()
	read := func() string {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.buf.String()
	}
	require.Eventually(t, func() bool { return strings.Contains(read(), s) }, 10*time.Second, 20*time.Millisecond,
		"the monitor saw the plane's traffic")
	return read()
}

// TestSkillEnvNeverCrossesRedis: with serve and the worker talking over a
// real Redis worker plane, a Skill's variable reaches its command, yet
// neither a call nor an answer on Redis carries the value: the worker
// reads and opens it from Postgres, and replaces it in output before
// answering.
func TestSkillEnvNeverCrossesRedis(t *testing.T) {
	rdb := redistest.New(t)
	prefix := redistest.Prefix(t)
	log := slog.New(slog.DiscardHandler)
	e := newToolEnv(t, func(c *domain.Config) {
		m := c.Runner.(localRunner).m
		w := redisx.NewPlaneWorker(rdb, redisx.PlaneWorkerOptions{ID: m.WorkerID(), Pools: []string{domain.Pool}, Capacity: 8, Prefix: prefix}, log)
		for kind, h := range domain.Handlers(m) {
			w.Handle(kind, h)
		}
		require.NoError(t, w.Start(context.Background()))
		t.Cleanup(w.Stop)
		c.Runner = &domain.PlaneRunner{Plane: redisx.NewPlane(rdb, prefix, log), Store: c.Store}
	})
	mon := monitorRedis(t)

	const secret = "tok-8d41e07b95"
	e.write(t, "skills/deploy-app/SKILL.md", skillMD)
	_, _, err := e.call(t, e.ada, "skill_package", map[string]any{"action": "install", "path": "skills/deploy-app"})
	require.NoError(t, err)
	_, _, err = e.call(t, e.ada, "skill_package", map[string]any{"action": "env_set", "name": "deploy-app", "env_name": "DEPLOY_TOKEN", "env_value": secret})
	require.NoError(t, err)

	_, m, err := e.call(t, e.ada, "exec_command", map[string]any{"cmd": `echo "token=$DEPLOY_TOKEN"; test ${#DEPLOY_TOKEN} = 14 && echo visor-marker-seen`, "skill": "deploy-app", "wait_ms": 10000})
	require.NoError(t, err)
	require.Equal(t, true, m["command_ok"], "the Skill's command sees the value: %v", m["output"])
	require.Equal(t, "token=[redacted:DEPLOY_TOKEN]\nvisor-marker-seen\n", m["output"])

	_, m, err = e.call(t, e.ada, "exec_command", map[string]any{"cmd": `sleep 1; echo "late $DEPLOY_TOKEN"`, "skill": "deploy-app", "wait_ms": 100})
	require.NoError(t, err)
	id := m["session_id"].(string)
	for m["status"] == "running" {
		_, m, err = e.call(t, e.ada, "session_observe", map[string]any{"action": "status", "session_id": id, "wait_ms": 5000})
		require.NoError(t, err)
	}
	require.Equal(t, "late [redacted:DEPLOY_TOKEN]\n", m["output"])

	text := mon.waitFor(t, "visor-marker-seen")
	require.Contains(t, text, prefix, "the calls went over this test's plane")
	require.False(t, strings.Contains(text, secret), "a Skill variable's value was on Redis")
}
