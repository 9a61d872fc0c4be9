// Command releasecheck checks the release recipe (.goreleaser.yaml) without
// compiling GoReleaser, whose dependency tree takes most of an hour to build
// on a busy two-core machine:
//
//   - the recipe is loaded strictly with GoReleaser's own configuration
//     loader (the package `goreleaser check` uses), so an unknown or
//     misspelt key fails;
//   - every build target the recipe names is cross-compiled with the
//     recipe's environment, flags and linker flags (its templates filled in),
//     checked to be static, and, for the machine's own platform, run to
//     print the stamped version.
//
// A full `goreleaser release --snapshot` remains the way to try archives and
// images before a release (docs/operations.md).
//
// Usage, from the repository root: go run -C .ci/releasecheck . ../..
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/goreleaser/goreleaser/v2/pkg/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: releasecheck REPOSITORY_ROOT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

// Only these templates may appear in a build's linker flags: the check
// fills them in, and any other would go unchecked.
var templates = map[string]string{
	"{{ .Version }}":     "0.0.0-check",
	"{{ .ShortCommit }}": "0123456789ab",
}

var anyTemplate = regexp.MustCompile(`\{\{[^}]*\}\}`)

func run(root string) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	project, err := config.Load(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		return fmt.Errorf(".goreleaser.yaml: %w", err)
	}
	fmt.Println(".goreleaser.yaml: loads strictly")
	if len(project.Builds) == 0 {
		return fmt.Errorf(".goreleaser.yaml names no builds")
	}
	for _, a := range project.Archives {
		for _, f := range a.Files {
			if _, err := os.Stat(filepath.Join(root, f.Source)); err != nil {
				return fmt.Errorf("archive %s lists %s: %w", a.ID, f.Source, err)
			}
		}
	}
	for _, d := range project.DockersV2 {
		if _, err := os.Stat(filepath.Join(root, d.Dockerfile)); err != nil {
			return fmt.Errorf("image %s: %w", d.ID, err)
		}
	}
	out, err := os.MkdirTemp("", "releasecheck")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	for _, b := range project.Builds {
		ldflags := strings.Join(b.Ldflags, " ")
		for k, v := range templates {
			ldflags = strings.ReplaceAll(ldflags, k, v)
		}
		if t := anyTemplate.FindString(ldflags); t != "" {
			return fmt.Errorf("build %s: the linker flags use %s, which this check does not fill in", b.ID, t)
		}
		for _, goos := range b.Goos {
			for _, goarch := range b.Goarch {
				bin := filepath.Join(out, goos+"_"+goarch, b.Binary)
				args := append([]string{"build"}, b.BuildDetails.Flags...)
				args = append(args, "-ldflags", ldflags, "-o", bin, b.Main)
				cmd := exec.Command("go", args...)
				cmd.Dir = root
				cmd.Env = append(append(os.Environ(), b.BuildDetails.Env...), "GOOS="+goos, "GOARCH="+goarch)
				if msg, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("build %s for %s/%s: %v\n%s", b.ID, goos, goarch, err, msg)
				}
				info, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
				if err != nil {
					return fmt.Errorf("go version -m %s: %v\n%s", bin, err, info)
				}
				if !bytes.Contains(info, []byte("CGO_ENABLED=0")) {
					return fmt.Errorf("build %s for %s/%s is not static", b.ID, goos, goarch)
				}
				fmt.Printf("build %s for %s/%s: static\n", b.ID, goos, goarch)
				if goos == runtime.GOOS && goarch == runtime.GOARCH {
					v, err := exec.Command(bin, "version").CombinedOutput()
					if err != nil {
						return fmt.Errorf("%s version: %v\n%s", bin, err, v)
					}
					if !bytes.HasPrefix(v, []byte("visor 0.0.0-check (commit 0123456789ab,")) {
						return fmt.Errorf("%s version does not print the stamped version: %s", bin, v)
					}
					fmt.Printf("build %s for %s/%s: prints %s", b.ID, goos, goarch, v)
				}
			}
		}
	}
	return nil
}
