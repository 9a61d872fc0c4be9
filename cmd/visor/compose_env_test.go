package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestComposeTakesSettingsFromVisorEnv renders deploy/compose.yaml with
// each Compose implementation present and a visor.env that sets
// VISOR_BASE_URL and VISOR_SANDBOX_IMAGES, with neither in the shell: every
// Visor service must get the file's values. A value written into the
// compose file's environment block would silently win over the file (the
// OAuth issuer would become http://localhost:8080).
func TestComposeTakesSettingsFromVisorEnv(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("docker-compose"); err != nil {
		pgtest.Unavailable(t, "docker-compose", err)
	}
	tools := [][]string{{"docker-compose"}}
	if out, err := exec.Command("docker", "compose", "version", "--short").CombinedOutput(); err == nil && strings.HasPrefix(string(out), "2.") {
		tools = append(tools, []string{"docker", "compose"})
	}
	envFile := filepath.Join(t.TempDir(), "visor.env")
	require.NoError(t, os.WriteFile(envFile, []byte("VISOR_BASE_URL=https://visor.example.test\nVISOR_SANDBOX_IMAGES=sandbox-a,sandbox-b\n"), 0o600))
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VISOR_") && !strings.HasPrefix(kv, "COMPOSE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "POSTGRES_PASSWORD=test-only", "VISOR_ENV_FILE="+envFile, "COMPOSE_PROJECT_NAME=visor")
	for _, tool := range tools {
		cmd := exec.Command(tool[0], append(tool[1:], "-f", "../../deploy/compose.yaml", "config")...)
		cmd.Env = env
		out, err := cmd.Output()
		require.NoError(t, err, "%v: %s", tool, exitStderr(err))
		var rendered struct {
			Services map[string]struct {
				Environment map[string]string `yaml:"environment"`
			} `yaml:"services"`
		}
		require.NoError(t, yaml.Unmarshal(out, &rendered), "%v: %s", tool, out)
		for _, svc := range []string{"migrate", "serve", "worker", "sandbox-worker"} {
			got := rendered.Services[svc].Environment
			require.Equal(t, "https://visor.example.test", got["VISOR_BASE_URL"], "%v: %s's VISOR_BASE_URL", tool, svc)
			require.Equal(t, "sandbox-a,sandbox-b", got["VISOR_SANDBOX_IMAGES"], "%v: %s's VISOR_SANDBOX_IMAGES", tool, svc)
		}
	}
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestComposeSecretsStayOutOfGitAndTheImage: deploy/.env holds the
// database password and deploy/visor.env the admin token and other
// settings. Git must not offer to commit them and the image build must not
// copy them into a layer.
func TestComposeSecretsStayOutOfGitAndTheImage(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		pgtest.Unavailable(t, "git", err)
	}
	for _, f := range []string{"deploy/.env", "deploy/visor.env"} {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", f)
		cmd.Dir = "../.."
		require.NoError(t, cmd.Run(), "git does not ignore %s", f)
	}
	fh, err := os.Open("../../.dockerignore")
	require.NoError(t, err)
	defer fh.Close()
	ignored := map[string]bool{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		ignored[strings.TrimSpace(sc.Text())] = true
	}
	require.NoError(t, sc.Err())
	for _, f := range []string{"deploy/.env", "deploy/visor.env"} {
		require.True(t, ignored[f], ".dockerignore leaves %s in the build context", f)
	}
}
