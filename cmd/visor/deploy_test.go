package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestDeployFilesDescribeTheStack checks deploy/ says what the README
// promises: a multi-stage Dockerfile building a static binary that runs as
// a non-root user, and a compose file with Postgres, Redis, a one-shot
// migration, serve and worker wired in that order. (No image registry is
// reachable here, so the image itself cannot be built in tests; see
// TestStaticBinaryRunsAsNonRootInAnEmptyImage for the runtime half.)
func TestDeployFilesDescribeTheStack(t *testing.T) {
	t.Parallel()
	df, err := os.ReadFile("../../deploy/Dockerfile")
	require.NoError(t, err)
	dockerfile := string(df)
	require.Len(t, regexp.MustCompile(`(?m)^FROM `).FindAllString(dockerfile, -1), 2, "want a build stage and a run stage")
	require.Regexp(t, `(?m)^FROM \S+ AS build$`, dockerfile)
	require.Contains(t, dockerfile, "CGO_ENABLED=0", "the binary must be static")
	require.Contains(t, dockerfile, "COPY --from=build")
	user := regexp.MustCompile(`(?m)^USER (\S+)$`).FindStringSubmatch(dockerfile)
	require.NotNil(t, user, "the run stage must name a user")
	require.NotRegexp(t, `^(root|0)(:|$)`, user[1], "the image must not run as root")

	raw, err := os.ReadFile("../../deploy/compose.yaml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image     string         `yaml:"image"`
			Command   []string       `yaml:"command"`
			Restart   string         `yaml:"restart"`
			DependsOn map[string]any `yaml:"depends_on"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	s := compose.Services
	for _, name := range []string{"postgres", "redis", "migrate", "serve", "worker"} {
		require.Contains(t, s, name)
	}
	require.Equal(t, []string{"migrate", "up"}, s["migrate"].Command)
	require.Equal(t, "no", s["migrate"].Restart, "the migration runs once")
	require.Equal(t, []string{"serve"}, s["serve"].Command)
	require.Equal(t, []string{"worker"}, s["worker"].Command)
	for _, name := range []string{"serve", "worker"} {
		dep, ok := s[name].DependsOn["migrate"].(map[string]any)
		require.True(t, ok, "%s must wait for the migration", name)
		require.Equal(t, "service_completed_successfully", dep["condition"], "%s must start on a migrated schema", name)
	}
	_, err = os.Stat("../../deploy/visor.env.example")
	require.NoError(t, err, "the example env file is missing")

	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "docker compose -f deploy/compose.yaml up")
}

// TestStaticBinaryRunsAsNonRootInAnEmptyImage builds the binary the way the
// Dockerfile does and runs it on the real Docker Engine in an image with
// nothing else in it, as the unprivileged user the Dockerfile uses.
func TestStaticBinaryRunsAsNonRootInAnEmptyImage(t *testing.T) {
	t.Parallel()
	// A cold build of the whole module takes minutes on a busy two-core
	// machine; later runs reuse the build cache.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		pgtest.Unavailable(t, "Docker Engine", firstLine(string(out), err))
	}
	dir := t.TempDir()
	// The same flags as deploy/Dockerfile and .goreleaser.yaml, so the
	// version printed is the one stamped in at link time.
	build := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version=v0.0.0-stamped -X main.commit=0123456789ab", "-o", filepath.Join(dir, "visor"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.CommandContext(ctx, filepath.Join(dir, "visor"), "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `^visor v0\.0\.0-stamped \(commit 0123456789ab, go1\.`, string(out), "visor version must print the stamped version and commit")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"),
		[]byte("FROM scratch\nCOPY visor /visor\nUSER 65532:65532\nENTRYPOINT [\"/visor\"]\n"), 0o644))

	tag := "visor-deploy-test:" + randSuffix()
	out, err = exec.CommandContext(ctx, "docker", "build", "-q", "-t", tag, dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })

	out, err = exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", tag, "version").CombinedOutput()
	require.NoError(t, err, "the static binary does not run in an empty image: %s", out)
	require.Contains(t, string(out), "visor v0.0.0-stamped")
	out, err = exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Config.User}}", tag).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "65532:65532", strings.TrimSpace(string(out)))
}

func firstLine(out string, err error) error {
	if line, _, _ := strings.Cut(strings.TrimSpace(out), "\n"); line != "" {
		return &cmdError{line}
	}
	return err
}

type cmdError struct{ msg string }

func (e *cmdError) Error() string { return e.msg }

func randSuffix() string { return strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "") }

// TestReleaseRecipeStampsTheVersion: the GoReleaser recipe builds static
// Linux binaries for amd64 and arm64 of ./cmd/visor with the version and
// commit linked into the variables `visor version` prints, archives the
// LICENSE and CHANGELOG with them, and builds the image from a Dockerfile
// that exists. (CI also loads it strictly and cross-compiles every target
// with .ci/releasecheck.)
func TestReleaseRecipeStampsTheVersion(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../.goreleaser.yaml")
	require.NoError(t, err)
	var cfg struct {
		Version int `yaml:"version"`
		Builds  []struct {
			Main    string   `yaml:"main"`
			Env     []string `yaml:"env"`
			Goos    []string `yaml:"goos"`
			Goarch  []string `yaml:"goarch"`
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
		Archives []struct {
			Files []string `yaml:"files"`
		} `yaml:"archives"`
		Dockers []struct {
			Dockerfile string   `yaml:"dockerfile"`
			Platforms  []string `yaml:"platforms"`
		} `yaml:"dockers_v2"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	require.Equal(t, 2, cfg.Version)
	require.Len(t, cfg.Builds, 1)
	b := cfg.Builds[0]
	require.Equal(t, "./cmd/visor", b.Main)
	require.Contains(t, b.Env, "CGO_ENABLED=0", "release binaries must be static")
	require.Equal(t, []string{"linux"}, b.Goos)
	require.ElementsMatch(t, []string{"amd64", "arm64"}, b.Goarch)
	ld := strings.Join(b.Ldflags, " ")
	require.Contains(t, ld, "-X main.version={{ .Version }}")
	require.Contains(t, ld, "-X main.commit={{ .ShortCommit }}")
	require.Len(t, cfg.Archives, 1)
	for _, f := range cfg.Archives[0].Files {
		_, err := os.Stat(filepath.Join("../..", f))
		require.NoError(t, err, "the archive lists %s", f)
	}
	require.Subset(t, cfg.Archives[0].Files, []string{"LICENSE", "CHANGELOG.md"})
	require.Len(t, cfg.Dockers, 1)
	df, err := os.ReadFile(filepath.Join("../..", cfg.Dockers[0].Dockerfile))
	require.NoError(t, err)
	require.Contains(t, string(df), "COPY ${TARGETPLATFORM}/visor ")
	require.Regexp(t, `(?m)^USER (nonroot|65532)(:|$)`, string(df))
	require.ElementsMatch(t, []string{"linux/amd64", "linux/arm64"}, cfg.Dockers[0].Platforms)

	license, err := os.ReadFile("../../LICENSE")
	require.NoError(t, err)
	require.Contains(t, string(license), "Apache License\n                           Version 2.0, January 2004")
	require.Contains(t, string(license), "END OF TERMS AND CONDITIONS")
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^## \[Unreleased\]$`, string(changelog))
}

// TestExampleEnvFileListsEveryVariable compares the variables the code
// reads (every VISOR_*/OTEL_* name in a non-test Go file; VISOR_TEST_* are
// the test suite's own) with envVars, and envVars with
// deploy/visor.env.example, both ways; the compose file and the Helm chart
// may only set variables that exist.
func TestExampleEnvFileListsEveryVariable(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`\b(?:VISOR|OTEL)_[A-Z0-9_]*[A-Z0-9]\b`)
	documented := map[string]bool{}
	for _, v := range envVars {
		documented[v.Name] = true
	}

	inCode := map[string]string{}
	require.NoError(t, filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(src), -1) {
			if !strings.HasPrefix(n, "VISOR_TEST_") {
				inCode[n] = path
			}
		}
		return nil
	}))
	for n, path := range inCode {
		require.True(t, documented[n], "%s names %s, which is not in envVars (config.go)", path, n)
	}
	for n := range documented {
		require.Contains(t, inCode, n, "envVars documents %s, which no code reads", n)
	}

	example, err := os.ReadFile("../../deploy/visor.env.example")
	require.NoError(t, err)
	inExample := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#? ?([A-Z][A-Z0-9_]*)=`).FindAllStringSubmatch(string(example), -1) {
		require.False(t, inExample[m[1]], "deploy/visor.env.example lists %s twice", m[1])
		inExample[m[1]] = true
		require.True(t, documented[m[1]], "deploy/visor.env.example sets %s, which Visor does not read", m[1])
	}
	for n := range documented {
		require.True(t, inExample[n], "deploy/visor.env.example must list %s (commented out at its default is fine)", n)
	}

	var chart []string
	require.NoError(t, filepath.WalkDir("../../deploy/helm/visor", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			chart = append(chart, path)
		}
		return err
	}))
	for _, f := range chart {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, n := range name.FindAllString(string(b), -1) {
			require.True(t, documented[n], "%s sets %s, which Visor does not read", f, n)
		}
	}
	raw, err := os.ReadFile("../../deploy/compose.yaml") // its ${VISOR_PORT} is compose's own
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	for svc, s := range compose.Services {
		for n := range s.Environment {
			// TMPDIR places the sandbox worker's script directories (Go's
			// os.TempDir) on the path shared with the host engine.
			require.True(t, documented[n] || svc == "postgres" || n == "TMPDIR", "compose.yaml's %s sets %s, which Visor does not read", svc, n)
		}
	}
}

// TestComposeProbesServeAndWorkerWithoutAShell: serve and worker have
// healthchecks that run the binary itself (the image has no shell or
// curl), the worker's probe has its listener, and Postgres' password has
// no default that would reach production.
func TestComposeProbesServeAndWorkerWithoutAShell(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/compose.yaml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	serve, worker := compose.Services["serve"], compose.Services["worker"]
	require.Equal(t, []string{"CMD", "/usr/local/bin/visor", "healthcheck", "-ready"}, serve.Healthcheck.Test)
	require.Equal(t, []string{"CMD", "/usr/local/bin/visor", "healthcheck", "-worker", "-ready"}, worker.Healthcheck.Test)
	require.NotEmpty(t, worker.Environment["VISOR_WORKER_HTTP_ADDR"], "the worker's healthcheck needs its probe listener")
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	for _, args := range [][]string{serve.Healthcheck.Test[2:], worker.Healthcheck.Test[2:]} {
		res := runCmd(t, nil, append(args, "-url", ok.URL)...) // the command and its flags exist
		require.NoError(t, res.err, "%v: %s", args, res.stderr)
	}

	require.NotRegexp(t, `\$\{POSTGRES_PASSWORD:?-`, string(raw), "no default database password")
	require.Equal(t, strings.Count(string(raw), "${POSTGRES_PASSWORD"), strings.Count(string(raw), "${POSTGRES_PASSWORD:?"), "the password is required wherever it is used")
	dockerfile, err := os.ReadFile("../../deploy/Dockerfile")
	require.NoError(t, err)
	require.Contains(t, string(dockerfile), "/usr/local/bin/visor", "the healthcheck runs the binary at this path")
}

// TestComposeGivesTheSocketOnlyToTheSandboxWorker: the Docker socket is
// mounted into the sandbox worker and nowhere else, its script directory
// has the same path on the host and in the container (the engine resolves
// bind mounts on the host), and it waits for the migration like serve.
func TestComposeGivesTheSocketOnlyToTheSandboxWorker(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/compose.yaml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			DependsOn   map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	for name, svc := range compose.Services {
		socket := false
		for _, v := range svc.Volumes {
			socket = socket || strings.Contains(v, "docker.sock")
		}
		require.Equal(t, name == "sandbox-worker", socket, "%s and the Docker socket", name)
		if name != "migrate" {
			require.NotEmpty(t, svc.Healthcheck.Test, "%s has no healthcheck", name)
		}
	}
	sw := compose.Services["sandbox-worker"]
	require.Empty(t, sw.Ports, "the sandbox worker publishes nothing")
	require.Equal(t, "service_completed_successfully", sw.DependsOn["migrate"].Condition)
	require.Equal(t, "service_healthy", sw.DependsOn["redis"].Condition)
	dir := sw.Environment["TMPDIR"]
	require.NotEmpty(t, dir, "the sandbox worker's script directory")
	require.Contains(t, sw.Volumes, dir+":"+dir, "the script directory is mounted at the same path")
}

// TestComposeFileReadsWithBothComposeImplementations asks Debian's
// docker-compose (1.29) and, where the docker CLI has it, Compose v2 to
// validate and render the file.
func TestComposeFileReadsWithBothComposeImplementations(t *testing.T) {
	t.Parallel()
	env := append(os.Environ(), "POSTGRES_PASSWORD=test-only", "VISOR_ENV_FILE=visor.env.example", "COMPOSE_PROJECT_NAME=visor", "COMPOSE_FILE=")
	tools := [][]string{{"docker-compose"}}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		pgtest.Unavailable(t, "docker-compose", err)
	}
	if out, err := exec.Command("docker", "compose", "version", "--short").CombinedOutput(); err == nil && strings.HasPrefix(string(out), "2.") {
		tools = append(tools, []string{"docker", "compose"})
	}
	for _, tool := range tools {
		args := append(tool[1:], "-f", "../../deploy/compose.yaml", "config")
		cmd := exec.Command(tool[0], args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%v: %s", tool, out)
		require.Contains(t, string(out), "sandbox-worker:", "%v", tool)
		require.Contains(t, string(out), "service_completed_successfully", "%v", tool)

		cmd = exec.Command(tool[0], args...)
		cmd.Env = append(env[:len(env):len(env)], "POSTGRES_PASSWORD=")
		out, err = cmd.CombinedOutput()
		require.Error(t, err, "%v renders without a database password", tool)
		require.Contains(t, string(out), "set POSTGRES_PASSWORD in deploy/.env", "%v", tool)
	}
}
