package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/docker"
	"github.com/visorhq/visor/docker/dockertest"
)

// sandboxWorld is a serve replica and a sandbox worker on one private
// Redis, with ada connected over MCP.
type sandboxWorld struct {
	w        *world
	serve    *replica
	redisURL string
	image    string
	workerID string
	worker   *workerProc
	// workerEnv is added to the worker's environment.
	workerEnv []string
	ada       *sdk.ClientSession
	progress  atomic.Int32
}

func newSandboxWorld(t testing.TB, workerEnv ...string) *sandboxWorld {
	image := dockertest.Sandbox(t)
	s := &sandboxWorld{w: newWorld(t), redisURL: privateRedis(t).URL(), image: image, workerID: "e2e-" + uuid.NewString()[:8]}
	s.serve = startReplica(t, "serve", s.w.dbURL, s.redisURL, "VISOR_SANDBOX_IMAGES="+image)
	s.workerEnv = workerEnv
	s.worker = s.startWorker(t)
	s.ada = s.connect(t, "")
	return s
}

// connect opens an MCP session as ada in a protocol version ("": the
// client's default).
func (s *sandboxWorld) connect(t testing.TB, version string) *sdk.ClientSession {
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) { s.progress.Add(1) },
	})
	var opts *sdk.ClientSessionOptions
	if version != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: s.serve.base + "/t/acme/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: s.w.adaKey, next: http.DefaultTransport}}}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (s *sandboxWorld) startWorker(t testing.TB) *workerProc {
	return startWorker(t, "sandbox", s.w.dbURL, s.redisURL, append([]string{"VISOR_SANDBOX_WORKER=true", "VISOR_WORKER_ID=" + s.workerID,
		"VISOR_SANDBOX_IMAGES=" + s.image}, s.workerEnv...)...)
}

func (s *sandboxWorld) run(ctx context.Context, t testing.TB, lang, code string, progress bool) (*sdk.CallToolResult, error) {
	return s.runOn(ctx, s.ada, lang, code, progress)
}

func (s *sandboxWorld) runOn(ctx context.Context, cs *sdk.ClientSession, lang, code string, progress bool) (*sdk.CallToolResult, error) {
	params := &sdk.CallToolParams{Name: "execute_program", Arguments: map[string]any{"language": lang, "code": code}}
	if progress {
		params.SetProgressToken("run-1")
	}
	return cs.CallTool(ctx, params)
}

// containers lists the sandbox containers of the world's worker.
func (s *sandboxWorld) containers(t testing.TB) []string {
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+docker.LabelKind+"="+string(docker.Sandbox), "--filter", "label="+docker.LabelWorker+"="+s.workerID).Output()
	require.NoError(t, err)
	return strings.Fields(string(out))
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestExecuteProgramOverMCP drives execute_program from an MCP client
// through serve, the worker plane and a sandbox worker to the Docker
// Engine: a run with progress, a cancel that removes the container (how
// fast is BenchmarkExecuteProgram/cancel's figure), a worker killed mid-run
// (a clear error, and its container removed when it starts again), and no
// worker at all (the unavailable answer, audited).
func TestExecuteProgramOverMCP(t *testing.T) {
	s := newSandboxWorld(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	res, err := s.run(ctx, t, "python", "import time\ntime.sleep(4.5)\nprint(6*7)", true)
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), "Exit code 0.")
	require.Contains(t, text(res), "42")
	var a struct {
		ExitCode int    `json:"exit_code"`
		Worker   string `json:"worker"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &a))
	require.Equal(t, s.workerID, a.Worker)
	require.GreaterOrEqual(t, s.progress.Load(), int32(1), "no progress notification while the script ran")
	require.Empty(t, s.containers(t))

	for _, version := range []string{legacyVersion, modernVersion} {
		t.Run("cancel removes the container in "+version, func(t *testing.T) {
			cs := s.connect(t, version)
			cctx, ccancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { _, err := s.runOn(cctx, cs, "sh", "sleep 60", false); errc <- err }()
			require.Eventually(t, func() bool { return len(s.containers(t)) == 1 }, 30*time.Second, 20*time.Millisecond)
			at := time.Now()
			ccancel()
			require.Error(t, <-errc)
			// The cancel removes it, not the script's 30 s timeout or the
			// janitor.
			require.Eventually(t, func() bool { return len(s.containers(t)) == 0 }, 10*time.Second, 20*time.Millisecond,
				"the container outlived the cancel")
			t.Logf("cancel to container removed: %s", time.Since(at))
		})
	}

	parent := t
	t.Run("a worker killed mid-run is an error, and its container goes when it restarts", func(t *testing.T) {
		resc := make(chan *sdk.CallToolResult, 1)
		go func() { res, _ := s.run(ctx, t, "sh", "sleep 60", false); resc <- res }()
		require.Eventually(t, func() bool { return len(s.containers(t)) == 1 }, 30*time.Second, 20*time.Millisecond)
		require.NoError(t, s.worker.cmd.Process.Kill())
		at := time.Now()
		select {
		case res := <-resc:
			require.NotNil(t, res)
			require.True(t, res.IsError)
			require.Contains(t, text(res), "Script sandbox unavailable (worker_lost)")
			// The kill may land between the container's creation and the
			// worker's "started" report, so either truthful account may
			// come; neither tells the caller that the script did not run.
			require.Contains(t, text(res), "check its effects before running it again")
			require.NotContains(t, text(res), "was not run")
			t.Logf("worker killed to caller told: %s", time.Since(at))
		case <-time.After(15 * time.Second):
			// Half the script's 30 s timeout: the loss was not noticed,
			// the run merely ended.
			t.Fatal("the caller of a killed worker hung")
		}
		require.Len(t, s.containers(t), 1, "a killed worker cannot clean up")
		s.worker = s.startWorker(parent) // the same id: its janitor removes the earlier life's container
		require.Eventually(t, func() bool { return len(s.containers(t)) == 0 }, 10*time.Second, 50*time.Millisecond)
	})

	t.Run("without a worker nothing runs, and the refusal is audited", func(t *testing.T) {
		require.NoError(t, s.worker.cmd.Process.Signal(os.Interrupt))
		<-s.worker.done
		res, err := s.run(ctx, t, "python", "print(1)", false)
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Contains(t, text(res), "Script sandbox unavailable (no_worker)")
		require.Contains(t, text(res), "run `visor worker` with VISOR_SANDBOX_WORKER=true", "the fix for a missing worker")
		require.NotContains(t, text(res), "docker pull", "the image is not the cause")
		var n int
		require.NoError(t, s.w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND tool = 'execute_program'
			AND event_type = 'script_sandbox_unavailable' AND outcome = 'tool_error'`, s.w.acme.ID).Scan(&n))
		require.GreaterOrEqual(t, n, 2) // worker_lost and no_worker
	})
}
