package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/internal/testsignal"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// composeTool is one implementation of the Compose CLI: Debian's
// docker-compose (1.29) or the Compose v2 plugin (docker compose).
type composeTool struct {
	name string
	argv []string
}

// composeTools lists the implementations on this machine. docker-compose
// is required; Compose v2 runs too when the docker CLI has the plugin.
func composeTools(t *testing.T) []composeTool {
	t.Helper()
	var tools []composeTool
	if _, err := exec.LookPath("docker-compose"); err != nil {
		pgtest.Unavailable(t, "docker-compose", err)
	}
	tools = append(tools, composeTool{"docker-compose", []string{"docker-compose"}})
	if out, err := exec.Command("docker", "compose", "version", "--short").CombinedOutput(); err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "2.") {
		tools = append(tools, composeTool{"compose-v2", []string{"docker", "compose"}})
	}
	return tools
}

// TestComposeStackComesUp builds the images deploy/compose.yaml runs (from
// Debian's packages: no image registry is reachable), brings the stack up
// on the machine's Docker Engine under a project name of its own with each
// Compose implementation present, drives it from outside, and takes it
// down again, leaving no container, network or volume of the project.
func TestComposeStackComesUp(t *testing.T) {
	t.Parallel()
	tools := composeTools(t)
	for _, bin := range []string{"docker", "debootstrap"} {
		if _, err := exec.LookPath(bin); err != nil {
			pgtest.Unavailable(t, bin, err)
		}
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		pgtest.Unavailable(t, "Docker Engine", errorWithOutput{err, out})
	}
	start := time.Now()
	images := buildStackImages(t)
	t.Logf("images ready in %s: %+v", time.Since(start).Round(time.Second), images)
	for _, tool := range tools {
		t.Run(tool.name, func(t *testing.T) {
			s := upStack(t, tool, images)
			checkStack(t, s)
			s.downAndCheckNothingLeft(t)
		})
	}
}

// stackImages are the images the test hands the compose file.
type stackImages struct {
	Visor, Postgres, Redis, Sandbox string
}

// buildStackImages builds (or finds, by content hash) every image the stack
// needs. The bases come from the repository's build scripts, which cache
// them by their inputs.
func buildStackImages(t *testing.T) stackImages {
	t.Helper()
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	base := strings.TrimSpace(string(mustRun(t, root, 20*time.Minute, "deploy/local/build-base.sh")))
	sandboxBase := strings.TrimSpace(string(mustRun(t, root, 20*time.Minute, "deploy/sandbox/build-base.sh")))

	imgs := stackImages{Redis: base}
	imgs.Postgres = buildImage(t, root, "visor-local-postgres", filepath.Join(root, "deploy/local"), "deploy/local/Dockerfile.postgres",
		[]string{base}, "--build-arg", "BASE="+base)
	imgs.Sandbox = buildImage(t, root, "visor-local-sandbox", filepath.Join(root, "deploy/sandbox"), "deploy/sandbox/Dockerfile",
		[]string{sandboxBase}, "--build-arg", "BASE="+sandboxBase)

	// Visor is compiled on the host (its build cache makes this quick) into
	// the layout the release Dockerfile copies from.
	ctx := t.TempDir()
	bin := filepath.Join(ctx, "linux/amd64/visor")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/visor")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	sum := fileHash(t, bin)
	imgs.Visor = buildImage(t, root, "visor-local", ctx, "deploy/Dockerfile.release",
		[]string{base, sum}, "--build-arg", "BASE="+base, "--build-arg", "TARGETPLATFORM=linux/amd64")
	return imgs
}

// buildImage builds dockerfile in context as name:<hash of the Dockerfile,
// the files beside it and inputs>, unless the machine already has it.
// Older tags of name are removed, so a machine keeps one of each.
func buildImage(t *testing.T, root, name, context, dockerfile string, inputs []string, args ...string) string {
	t.Helper()
	df := filepath.Join(root, dockerfile)
	parts := append([]string{fileHash(t, df)}, inputs...)
	if strings.HasPrefix(context, root+string(filepath.Separator)) {
		entries, err := os.ReadDir(context)
		require.NoError(t, err)
		for _, e := range entries {
			if !e.IsDir() {
				parts = append(parts, e.Name(), fileHash(t, filepath.Join(context, e.Name())))
			}
		}
	}
	tag := name + ":" + hashOf(parts...)
	if imageExists(tag) {
		return tag
	}
	mustRun(t, root, 10*time.Minute, "docker", append([]string{"build", "-q", "-f", df, "-t", tag}, append(args, context)...)...)
	old, _ := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}", name).Output()
	for _, o := range strings.Fields(string(old)) {
		if o != tag {
			_ = exec.Command("docker", "rmi", o).Run()
		}
	}
	return tag
}

// stack is one running compose project.
type stack struct {
	tool    composeTool
	project string
	env     []string
	root    string
	base    string
}

// compose runs the Compose CLI on the project and returns its stdout.
func (s *stack) compose(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append(append([]string{}, s.tool.argv[1:]...), "-f", filepath.Join(s.root, "deploy/compose.yaml"), "-p", s.project)
	cmd := exec.CommandContext(ctx, s.tool.argv[0], append(argv, args...)...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Dir = s.root
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %v: %w\n%s%s", s.tool.name, args, err, out, stderr.String())
	}
	return string(out), nil
}

// upStack starts the stack under a fresh project name with the test's
// images, a free port and a password of its own.
func upStack(t *testing.T, tool composeTool, imgs stackImages) *stack {
	t.Helper()
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	work, err := os.MkdirTemp("", "visor-compose-")
	require.NoError(t, err)
	// The sandbox worker's script directory is mounted at the same path on
	// the host and in the container; the engine creates it as root.
	scripts := filepath.Join(work, "sandbox")
	port := freePort(t)
	s := &stack{
		tool:    tool,
		project: "visore2e" + randomHex(t, 6),
		root:    root,
		base:    fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	// Visor's settings go in visor.env, as the docs say; the shell
	// carries only what the compose file itself interpolates.
	envFile := filepath.Join(work, "visor.env")
	require.NoError(t, os.WriteFile(envFile, []byte("VISOR_LOG_FORMAT=text\nVISOR_SHUTDOWN_TIMEOUT=3s\n"+
		"VISOR_BASE_URL="+s.base+"\nVISOR_SANDBOX_IMAGES="+imgs.Sandbox+"\n"), 0o600))
	s.env = []string{
		"POSTGRES_PASSWORD=" + randomHex(t, 16),
		"VISOR_IMAGE=" + imgs.Visor, "POSTGRES_IMAGE=" + imgs.Postgres, "REDIS_IMAGE=" + imgs.Redis,
		"VISOR_ENV_FILE=" + envFile, "SANDBOX_SCRIPT_DIR=" + scripts,
		fmt.Sprintf("VISOR_PORT=%d", port), "VISOR_BASE_URL=", "VISOR_SANDBOX_IMAGES=",
		"COMPOSE_PROJECT_NAME=", "COMPOSE_FILE=",
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.compose(t, time.Minute, "logs", "--no-color", "--tail", "80")
			t.Logf("--- %s logs:\n%s", s.project, out)
		}
		// Whatever a failed step left running goes too.
		_, _ = s.compose(t, 2*time.Minute, "down", "-v", "--remove-orphans", "-t", "5")
		_ = os.RemoveAll(work)
	})
	started := time.Now()
	_, err = s.compose(t, 5*time.Minute, "up", "-d", "--no-build")
	require.NoError(t, err)
	t.Logf("%s: up -d returned in %s", tool.name, time.Since(started).Round(100*time.Millisecond))
	s.waitHealthy(t, 2*time.Minute)
	t.Logf("%s: all services healthy %s after up", tool.name, time.Since(started).Round(100*time.Millisecond))
	return s
}

// containerOf is the id of the project's one container of service.
func (s *stack) containerOf(t *testing.T, service string) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq",
		"--filter", "label=com.docker.compose.project="+s.project,
		"--filter", "label=com.docker.compose.service="+service).Output()
	require.NoError(t, err)
	ids := strings.Fields(string(out))
	require.Len(t, ids, 1, "containers of %s", service)
	return ids[0]
}

// waitHealthy waits until every long-running service reports healthy.
func (s *stack) waitHealthy(t *testing.T, within time.Duration) {
	t.Helper()
	services := []string{"postgres", "redis", "serve", "worker", "sandbox-worker"}
	var waiting []string
	testsignal.Until(t, within, time.Second, "every service healthy", func() bool {
		waiting = waiting[:0]
		for _, svc := range services {
			out, err := exec.Command("docker", "inspect", "--format", "{{.State.Health.Status}}", s.containerOf(t, svc)).Output()
			require.NoError(t, err)
			if st := strings.TrimSpace(string(out)); st != "healthy" {
				waiting = append(waiting, svc+"="+st)
			}
		}
		if len(waiting) > 0 {
			t.Logf("waiting for %v", waiting)
		}
		return len(waiting) == 0
	})
}

// checkStack drives the running stack from outside, as an operator would.
func checkStack(t *testing.T, s *stack) {
	out, err := exec.Command("docker", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", s.containerOf(t, "migrate")).Output()
	require.NoError(t, err)
	require.Equal(t, "exited 0", strings.TrimSpace(string(out)), "the migration ran to completion")

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(s.base + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}

	// Only the sandbox worker holds the Docker socket.
	for _, svc := range []string{"serve", "worker", "migrate", "postgres", "redis", "sandbox-worker"} {
		out, err := exec.Command("docker", "inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", s.containerOf(t, svc)).Output()
		require.NoError(t, err)
		hasSocket := strings.Contains(string(out), "docker.sock")
		require.Equal(t, svc == "sandbox-worker", hasSocket, "%s mounts %s", svc, out)
	}

	// A key minted with the CLI inside the serve container.
	visor := "/usr/local/bin/visor"
	_, err = s.compose(t, time.Minute, "exec", "-T", "serve", visor, "tenant", "create", "-slug", "acme", "-name", "Acme")
	require.NoError(t, err)
	out2, err := s.compose(t, time.Minute, "exec", "-T", "serve", visor, "key", "create", "-tenant", "acme", "-name", "ops")
	require.NoError(t, err)
	token := regexp.MustCompile(`vsk_\S+`).FindString(out2)
	require.NotEmpty(t, token, "key create printed no key: %s", out2)
	tenantOfKey.Store(token, "acme")

	// The OAuth issuer is built from the VISOR_BASE_URL visor.env gave.
	resp, err := http.Get(s.base + "/.well-known/oauth-authorization-server/t/acme")
	require.NoError(t, err)
	var meta struct{ Issuer string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&meta))
	resp.Body.Close()
	require.Equal(t, s.base+"/t/acme", meta.Issuer, "the issuer comes from visor.env")

	names := toolNames(t, &replica{name: s.project, base: s.base}, token)
	require.NotEmpty(t, names)
	require.Contains(t, names, "agent_status")

	// A script runs through the sandbox worker: serve hands it over the
	// worker plane, the worker starts a container on the host's engine.
	require.Contains(t, names, "execute_program")
	res := callTool(t, &replica{name: s.project, base: s.base}, token, "execute_program",
		map[string]any{"language": "python", "code": "print(6 * 7)"})
	require.NotEmpty(t, res.Content)
	require.Contains(t, res.Content[0].Text, "42", "the script's output comes back")
}

// downAndCheckNothingLeft takes the stack down with its volumes and
// asserts the engine holds nothing of the project any more.
func (s *stack) downAndCheckNothingLeft(t *testing.T) {
	t.Helper()
	started := time.Now()
	_, err := s.compose(t, 2*time.Minute, "down", "-v", "--remove-orphans", "-t", "5")
	require.NoError(t, err)
	t.Logf("%s: down -v in %s", s.tool.name, time.Since(started).Round(100*time.Millisecond))
	label := "label=com.docker.compose.project=" + s.project
	for _, kind := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
		out, err := exec.Command("docker", append(kind, "--filter", label)...).Output()
		require.NoError(t, err)
		require.Empty(t, strings.TrimSpace(string(out)), "docker %v still lists the project's", kind)
	}
	// Named by the project even where a label is missing.
	out, err := exec.Command("docker", "network", "ls", "--format", "{{.Name}}").Output()
	require.NoError(t, err)
	require.NotContains(t, string(out), s.project)
	out, err = exec.Command("docker", "volume", "ls", "--format", "{{.Name}}").Output()
	require.NoError(t, err)
	require.NotContains(t, string(out), s.project)
}

// mustRun runs a command in dir and returns its stdout.
func mustRun(t *testing.T, dir string, timeout time.Duration, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %v:\n%s", name, args, tail([]byte(stderr.String())))
	return out
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return hashOf(string(b))
}

// hashOf is a short hash of parts, for image tags.
func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
