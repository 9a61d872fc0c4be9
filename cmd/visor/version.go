package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

// version and commit are set at link time:
// -ldflags "-X main.version=v1.2.3 -X main.commit=abc123". Without them the
// commit comes from the build's VCS stamp, when there is one.
var (
	version = "dev"
	commit  = ""
)

func versionCommand() command {
	return command{
		name: "version", summary: "print the version",
		detail: "Prints Visor's version, the commit it was built from, and the Go version.",
		run: func(_ context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if err := parse(fs, args); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, versionString())
			return nil
		},
	}
}

func versionString() string {
	rev, goVersion := commit, "unknown"
	if rev == "" {
		rev = "unknown"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 && commit == "" {
				rev = s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("visor %s (commit %s, %s)", version, rev, goVersion)
}
