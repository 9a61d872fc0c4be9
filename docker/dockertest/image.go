// Package dockertest gives tests the images of deploy/ built on this
// machine, with no image registry: deploy/<name>/build-base.sh makes a
// Debian base from the machine's Debian mirror (once; it is reused while
// its inputs are unchanged), and deploy/<name>/Dockerfile is built FROM it,
// tagged by a hash of the base and the files the image copies in.
//
// When the Docker Engine cannot be reached the test is skipped with a loud
// reason, unless VISOR_TEST_REQUIRE_SERVICES=1 (set by CI), in which case it
// fails.
package dockertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// built holds one build per image name for the test process.
var (
	mu    sync.Mutex
	built = map[string]*build{}
)

type build struct {
	once sync.Once
	tag  string
	err  error
}

// Sandbox returns the tag of the script sandbox image (deploy/sandbox).
func Sandbox(t testing.TB) string { return Image(t, "sandbox", "Dockerfile") }

// Browser returns the tag of the computer-use browser image
// (deploy/browser), Chromium included.
func Browser(t testing.TB) string { return Image(t, "browser", "Dockerfile", "start-browser") }

// Workspace returns the tag of the workspace image (deploy/workspace):
// a shell, Python 3 and Git.
func Workspace(t testing.TB) string { return Image(t, "workspace", "Dockerfile") }

// Image returns the tag of the image built from deploy/<name>, building it
// the first time a test process asks; files are the build inputs besides
// the base that decide the tag.
func Image(t testing.TB, name string, files ...string) string {
	t.Helper()
	RequireEngine(t)
	mu.Lock()
	b := built[name]
	if b == nil {
		b = &build{}
		built[name] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.tag, b.err = buildImage(name, files) })
	if b.err != nil {
		t.Fatalf("build the %s image: %v", name, b.err)
	}
	return b.tag
}

// RequireEngine skips the test loudly when the Docker Engine cannot be
// reached, or fails it under VISOR_TEST_REQUIRE_SERVICES=1 (the same rule
// as the database helpers').
func RequireEngine(t testing.TB) {
	t.Helper()
	out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv("VISOR_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatalf("Docker Engine is required (VISOR_TEST_REQUIRE_SERVICES=1) but unavailable: %v %s", err, out)
	}
	t.Skipf("SKIPPED: Docker Engine unavailable (%v); set VISOR_TEST_REQUIRE_SERVICES=1 to make this a failure", err)
}

func buildImage(name string, files []string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "deploy", name)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "build-base.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build-base.sh: %w: %s", err, tail(stderr.Bytes()))
	}
	base := strings.TrimSpace(string(out))
	h := sha256.New()
	h.Write([]byte(base + "\n"))
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	tag := "visor-" + name + ":test-" + hex.EncodeToString(h.Sum(nil)[:8])
	if exec.CommandContext(ctx, "docker", "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	bcmd := exec.CommandContext(ctx, "docker", "build", "-q", "--network", "none", "--build-arg", "BASE="+base, "-t", tag, dir)
	bcmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := bcmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build: %w: %s", err, tail(out))
	}
	return tag, nil
}

// tail keeps the end of a command's output, where the error is.
func tail(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// repoRoot is the repository's top folder: the nearest folder above the
// test's working directory (its package's folder) that holds the module's
// go.mod. It does not depend on the source paths compiled into the binary,
// which -trimpath removes.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/visorhq/visor\n")) {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("dockertest: no folder above the working directory holds the visor module's go.mod")
		}
		dir = up
	}
}
