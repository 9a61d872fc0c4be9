// Package sandboxtest gives tests a sandbox image built on this machine,
// with no image registry: deploy/sandbox/build-base.sh makes a Debian base
// from the machine's Debian mirror (once; it is reused while its inputs are
// unchanged), and deploy/sandbox/Dockerfile is built FROM it.
//
// When the Docker Engine cannot be reached the test is skipped with a loud
// reason, unless VISOR_TEST_REQUIRE_SERVICES=1 (set by CI), in which case it
// fails.
package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	once  sync.Once
	image string
	err   error
)

// Image returns the tag of the sandbox image built from deploy/sandbox,
// building it the first time a test process asks.
func Image(t testing.TB) string {
	t.Helper()
	if out, derr := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); derr != nil {
		unavailable(t, &cmdError{derr, out})
	}
	once.Do(func() { image, err = build() })
	if err != nil {
		t.Fatalf("build the sandbox image: %v", err)
	}
	return image
}

// unavailable skips the test loudly, or fails it under
// VISOR_TEST_REQUIRE_SERVICES=1. (The same rule as pgtest's; a services
// package may not import storage helpers.)
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("VISOR_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatalf("Docker Engine is required (VISOR_TEST_REQUIRE_SERVICES=1) but unavailable: %v", err)
	}
	t.Skipf("SKIPPED: Docker Engine unavailable (%v); set VISOR_TEST_REQUIRE_SERVICES=1 to make this a failure", err)
}

func build() (string, error) {
	dir := deployDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "build-base.sh")).Output()
	if err != nil {
		return "", &cmdError{err, stderrOf(err)}
	}
	base := strings.TrimSpace(string(out))
	dockerfile, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(base+"\n"), dockerfile...))
	tag := "visor-sandbox:test-" + hex.EncodeToString(sum[:8])
	if exec.CommandContext(ctx, "docker", "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	cmd := exec.CommandContext(ctx, "docker", "build", "-q", "--network", "none", "--build-arg", "BASE="+base, "-t", tag, dir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &cmdError{err, out}
	}
	return tag, nil
}

// deployDir is the repository's deploy/sandbox, found from this file.
func deployDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "sandbox")
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

type cmdError struct {
	err error
	out []byte
}

func (e *cmdError) Error() string {
	out := bytes.TrimSpace(e.out)
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	return e.err.Error() + ": " + string(out)
}
