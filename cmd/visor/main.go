// Command visor is Visor's one binary: the HTTP edge (serve), the job worker
// (worker), schema migrations (migrate), a one-command local start (dev) and
// a few bootstrap commands for operators without the dashboard.
//
// Everything is wired here by hand: main builds an env, run picks the
// subcommand, and each subcommand opens only what it needs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], &env{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "visor: "+line)
		}
		os.Exit(1)
	}
}

// env is what a run sees of the outside world, so tests can run commands
// in-process.
type env struct {
	getenv func(string) string
	// stdin is where secrets given with a -…-stdin flag are read; nil
	// means the process's standard input.
	stdin          io.Reader
	stdout, stderr io.Writer
	// listening, when set, is told the address `serve`/`dev` bound.
	listening func(net.Addr)
}

// errUsage marks a command line that could not be understood; the usage
// was already printed.
var errUsage = errors.New("bad usage")

// command is one subcommand.
type command struct {
	name    string
	args    string // synopsis after the name
	summary string // one line for `visor help`
	detail  string // paragraph for `visor help CMD` and `visor CMD -h`
	run     func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error
	actions []action // a bootstrap command's actions
}

func commands() []command {
	return []command{
		serveCommand(), workerCommand(), migrateCommand(), devCommand(),
		tenantCommand(), memberCommand(), agentCommand(), keyCommand(), dbsourceCommand(), upstreamCommand(), secretsCommand(), memoryCommand(),
		healthcheckCommand(), versionCommand(), docsCommand(),
	}
}

// run executes the subcommand named by args[0].
func run(ctx context.Context, args []string, e *env) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := findCommand(args[1]); ok {
				newFlagSet(c, e.stdout).Usage()
				return nil
			}
			fmt.Fprintf(e.stderr, "visor: unknown command %q\n", args[1])
			return errUsage
		}
		printHelp(e.stdout)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(e.stderr, "visor: unknown command %q; run `visor help`\n", args[0])
		return errUsage
	}
	fs := newFlagSet(c, e.stderr)
	return c.run(ctx, e, fs, args[1:])
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func newFlagSet(c command, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("visor "+c.name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: visor %s %s\n\n%s\n", c.name, c.args, c.detail)
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(w, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses flags; -h prints the usage and ends the command with
// flag.ErrHelp, which main treats as success.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `Visor serves the Model Context Protocol to a tenant's AI employees, operators
and OAuth clients, showing each caller exactly the tools it may call.

usage: visor <command> [flags]

commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `  help        show help for a command: visor help <command> (or visor <command> -h)

Configuration comes from VISOR_* environment variables; see README.md.
`)
}
