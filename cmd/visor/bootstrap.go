package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// The bootstrap commands manage tenants, members, agents and keys straight
// in Postgres, for operators without the dashboard (or before it has a
// first owner). They go through identity.Service like every other writer.
// They announce changes on Redis when it is reachable; without it, serving
// replicas still pick the changes up by reconciling against the tenant's
// policy version.

type action struct {
	name, args, help string
	// audit is the admin API operation id of the change the action makes
	// ("" for an action that reads): its runs are recorded in the audit
	// trail under that name (recorded).
	audit string
	run   func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, args []string) error
	flags func(fs *flag.FlagSet)
}

func bootstrapCommand(name, summary, detail string, actions ...action) command {
	var b strings.Builder
	for _, ac := range actions {
		fmt.Fprintf(&b, "\n  visor %s %s %s\n      %s", name, ac.name, ac.args, ac.help)
	}
	return command{
		name: name, args: "<action> [flags]", summary: summary, actions: actions,
		detail: detail + "\n\nactions:" + b.String() + "\n\nRun `visor " + name + " <action> -h` for an action's flags.",
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
				fs.SetOutput(e.stdout)
				fs.Usage()
				if len(args) == 0 {
					return errUsage
				}
				return flag.ErrHelp
			}
			for _, ac := range actions {
				if ac.name != args[0] {
					continue
				}
				afs := flag.NewFlagSet("visor "+name+" "+ac.name, flag.ContinueOnError)
				afs.SetOutput(e.stderr)
				afs.Usage = func() {
					fmt.Fprintf(afs.Output(), "usage: visor %s %s %s\n\n%s\n\nflags:\n", name, ac.name, ac.args, ac.help)
					afs.PrintDefaults()
				}
				if ac.flags != nil {
					ac.flags(afs)
				}
				if err := parse(afs, args[1:]); err != nil {
					return err
				}
				cfg, err := LoadConfig(e.getenv)
				if err != nil {
					return err
				}
				a, err := openApp(ctx, cfg, newLogger(cfg, e.stderr), nil, appNeeds{schemaCheck: true, announce: true})
				if err != nil {
					return err
				}
				defer a.Close()
				ctx := context.WithValue(ctx, stdinKey{}, e.stdin)
				if ac.audit == "" {
					return ac.run(ctx, a, e.stdout, afs, afs.Args())
				}
				return recorded(ctx, a, ac, afs, afs.Args(), func(ctx context.Context) error {
					return ac.run(ctx, a, e.stdout, afs, afs.Args())
				})
			}
			fmt.Fprintf(e.stderr, "visor %s: unknown action %q; run `visor %s -h`\n", name, args[0], name)
			return errUsage
		},
	}
}

func str(fs *flag.FlagSet, name string) string { return fs.Lookup(name).Value.String() }

func required(fs *flag.FlagSet, names ...string) error {
	var missing []string
	for _, n := range names {
		if str(fs, n) == "" {
			missing = append(missing, "-"+n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: missing %s", fs.Name(), strings.Join(missing, ", "))
	}
	return nil
}

type stdinKey struct{}

// readStdinLine reads the first line of the command's standard input,
// without its line break, for the flag that asked for it.
func readStdinLine(ctx context.Context, flagName string) (string, error) {
	in, _ := ctx.Value(stdinKey{}).(io.Reader)
	if in == nil {
		in = os.Stdin
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("-%s: nothing to read on standard input", flagName)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func tenantFlag(fs *flag.FlagSet) { fs.String("tenant", "", "tenant slug (required)") }

func lookupTenant(ctx context.Context, a *app, fs *flag.FlagSet) (identity.Tenant, error) {
	if err := required(fs, "tenant"); err != nil {
		return identity.Tenant{}, err
	}
	t, err := a.ids.TenantBySlug(ctx, str(fs, "tenant"))
	if fault.Is(err, fault.NotFound) {
		return t, fmt.Errorf("no tenant %q; list them with `visor tenant list`", str(fs, "tenant"))
	}
	if err == nil {
		noteTenant(ctx, t.ID)
	}
	return t, err
}

func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func cliErr(err error) error {
	if c := fault.CodeOf(err); c != fault.Internal && c != "" {
		return shownErr{err}
	}
	return err
}

// shownErr prints only a domain error's caller-safe message, and keeps the
// error (and its fault code) in the chain.
type shownErr struct{ err error }

func (e shownErr) Error() string { return fault.Message(e.err) }
func (e shownErr) Unwrap() error { return e.err }
