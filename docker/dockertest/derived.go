package dockertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Derived returns the tag of an image built FROM the sandbox's local base
// (deploy/sandbox/build-base.sh) with files copied in: each key of files
// is a path in the build context (what dockerfile's COPY lines name), each
// value a file or folder on this machine. dockerfile is the Dockerfile's
// body after its FROM line. The tag is visor-<name>:test-<hash of the
// base, the body and every file's content>, so a machine that holds it
// reuses it. It is built once per test process; a failed build fails t.
func Derived(t testing.TB, name, dockerfile string, files map[string]string) string {
	t.Helper()
	RequireEngine(t)
	mu.Lock()
	b := built["derived:"+name]
	if b == nil {
		b = &build{}
		built["derived:"+name] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.tag, b.err = buildDerived(name, dockerfile, files) })
	if b.err != nil {
		t.Fatalf("build the %s image: %v", name, b.err)
	}
	return b.tag
}

func buildDerived(name, body string, files map[string]string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "deploy", "sandbox", "build-base.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, script).Output()
	if err != nil {
		return "", fmt.Errorf("build-base.sh: %w", err)
	}
	base := strings.TrimSpace(string(out))
	dockerfile := "FROM " + base + "\n" + body
	h := sha256.New()
	h.Write([]byte(dockerfile))
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := hashTree(h, k, files[k]); err != nil {
			return "", err
		}
	}
	tag := "visor-" + name + ":test-" + hex.EncodeToString(h.Sum(nil)[:8])
	if exec.CommandContext(ctx, "docker", "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	dir, err := os.MkdirTemp("", "visor-image-"+name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for _, k := range keys {
		dst := filepath.Join(dir, k)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if out, err := exec.CommandContext(ctx, "cp", "-a", files[k], dst).CombinedOutput(); err != nil {
			return "", fmt.Errorf("copy %s: %w: %s", files[k], err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return "", err
	}
	bcmd := exec.CommandContext(ctx, "docker", "build", "-q", "--network", "none", "-t", tag, dir)
	bcmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := bcmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build: %w: %s", err, tail(out))
	}
	return tag, nil
}

// hashTree writes the names and contents of the files under root.
func hashTree(h io.Writer, name, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "\x00%s/%s\x00", name, rel)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			h.Write([]byte(target))
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
}

var (
	fixtureOnce sync.Once
	fixtureBin  string
	fixtureErr  error
)

// MCPFixtureCommand runs the Go SDK stdio fixture server in MCPFixture's
// image.
var MCPFixtureCommand = []string{"/usr/local/bin/mcp-fixture"}

// MCPFixture returns the tag of the sandbox base with the Go SDK stdio
// MCP fixture server (docker/mcpstdio/internal/fixture) built static.
func MCPFixture(t testing.TB) string {
	t.Helper()
	RequireEngine(t)
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "visor-mcp-fixture-")
		if err != nil {
			fixtureErr = err
			return
		}
		fixtureBin = filepath.Join(dir, "mcp-fixture")
		root, err := repoRoot()
		if err != nil {
			fixtureErr = err
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-o", fixtureBin, "./docker/mcpstdio/internal/fixture")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fixtureErr = fmt.Errorf("build the fixture server: %w: %s", err, tail(out))
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return Derived(t, "mcp-fixture", "COPY mcp-fixture /usr/local/bin/mcp-fixture\n", map[string]string{"mcp-fixture": fixtureBin})
}
