// Package browsertest gives tests the computer-use browser image built on
// this machine, with no image registry: deploy/browser/build-base.sh makes a
// Debian base with Chromium from the machine's Debian mirror (once; reused
// while its inputs are unchanged), and deploy/browser/Dockerfile is built
// FROM it.
//
// When the Docker Engine cannot be reached the test is skipped with a loud
// reason, unless VISOR_TEST_REQUIRE_SERVICES=1, in which case it fails.
package browsertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// Image returns the tag of the browser image, building it the first time a
// test process asks.
func Image(t testing.TB) string {
	t.Helper()
	if out, derr := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); derr != nil {
		if os.Getenv("VISOR_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("Docker Engine is required (VISOR_TEST_REQUIRE_SERVICES=1) but unavailable: %v %s", derr, out)
		}
		t.Skipf("SKIPPED: Docker Engine unavailable (%v); set VISOR_TEST_REQUIRE_SERVICES=1 to make this a failure", derr)
	}
	once.Do(func() { image, err = build() })
	if err != nil {
		t.Fatalf("build the browser image: %v", err)
	}
	return image
}

func build() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "deploy", "browser")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "build-base.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build-base.sh: %w: %s", err, tail(stderr.String()))
	}
	base := strings.TrimSpace(string(out))
	h := sha256.New()
	h.Write([]byte(base + "\n"))
	for _, f := range []string{"Dockerfile", "start-browser"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	tag := "visor-browser:test-" + hex.EncodeToString(h.Sum(nil)[:8])
	if exec.CommandContext(ctx, "docker", "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	bcmd := exec.CommandContext(ctx, "docker", "build", "-q", "--network", "none", "--build-arg", "BASE="+base, "-t", tag, dir)
	bcmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := bcmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build: %w: %s", err, tail(string(out)))
	}
	return tag, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
