package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

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
	rev, goVersion := "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("visor %s (commit %s, %s)", version, rev, goVersion)
}
