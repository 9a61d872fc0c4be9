package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// The bootstrap commands manage tenants, members, agents and keys straight
// in Postgres, for operators without the dashboard (or before it has a
// first owner). They go through identity.Service like every other writer.
// Without Redis they announce nothing; serving replicas pick the changes
// up by reconciling against the tenant's policy version.

type action struct {
	name, args, help string
	run              func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, args []string) error
	flags            func(fs *flag.FlagSet)
}

func bootstrapCommand(name, summary, detail string, actions ...action) command {
	var b strings.Builder
	for _, ac := range actions {
		fmt.Fprintf(&b, "\n  visor %s %s %s\n      %s", name, ac.name, ac.args, ac.help)
	}
	return command{
		name: name, args: "<action> [flags]", summary: summary,
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
				a, err := openApp(ctx, cfg, newLogger(cfg, e.stderr), nil, appNeeds{schemaCheck: true})
				if err != nil {
					return err
				}
				defer a.Close()
				return ac.run(ctx, a, e.stdout, afs, afs.Args())
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

func tenantFlag(fs *flag.FlagSet) { fs.String("tenant", "", "tenant slug (required)") }

func lookupTenant(ctx context.Context, a *app, fs *flag.FlagSet) (identity.Tenant, error) {
	if err := required(fs, "tenant"); err != nil {
		return identity.Tenant{}, err
	}
	t, err := a.ids.Store().TenantBySlug(ctx, str(fs, "tenant"))
	if fault.Is(err, fault.NotFound) {
		return t, fmt.Errorf("no tenant %q; list them with `visor tenant list`", str(fs, "tenant"))
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

func tenantCommand() command {
	return bootstrapCommand("tenant", "create and list tenants", "Tenants are organizations; everything else belongs to one.",
		action{name: "create", args: "-slug SLUG -name NAME", help: "create a tenant",
			flags: func(fs *flag.FlagSet) {
				fs.String("slug", "", "URL name, 3-40 of a-z 0-9 - (required)")
				fs.String("name", "", "display name (required)")
			},
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				if err := required(fs, "slug", "name"); err != nil {
					return err
				}
				t, err := a.ids.CreateTenant(ctx, str(fs, "slug"), str(fs, "name"))
				if err != nil {
					return cliErr(err)
				}
				fmt.Fprintf(w, "created tenant %s (%s)\n", t.Slug, t.ID)
				return nil
			}},
		action{name: "list", help: "list every tenant",
			run: func(ctx context.Context, a *app, w io.Writer, _ *flag.FlagSet, _ []string) error {
				ts, err := a.ids.Store().ListTenants(ctx)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, t := range ts {
					rows = append(rows, []string{t.Slug, t.Name, t.ID.String(), t.CreatedAt.UTC().Format(time.DateTime)})
				}
				return table(w, "SLUG\tNAME\tID\tCREATED", rows)
			}},
	)
}

func memberCommand() command {
	return bootstrapCommand("member", "add and list a tenant's members (dashboard users)",
		"Members sign in to the dashboard and approve OAuth consent. Roles: owner, admin, operator, viewer.",
		action{name: "create", args: "-tenant SLUG -email EMAIL [-role owner] [-password PW]",
			help: "add a member; without -password one is generated and printed once",
			flags: func(fs *flag.FlagSet) {
				tenantFlag(fs)
				fs.String("email", "", "email address (required)")
				fs.String("role", "owner", "owner, admin, operator or viewer")
				fs.String("password", "", "password, 10-256 bytes (default: generated)")
			},
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				if err := required(fs, "email"); err != nil {
					return err
				}
				pw, shown := str(fs, "password"), false
				if pw == "" {
					pw, shown = randomSecret(), true
				}
				m, err := a.ids.CreateMember(ctx, t.ID, str(fs, "email"), pw, identity.Role(str(fs, "role")))
				if err != nil {
					return cliErr(err)
				}
				fmt.Fprintf(w, "added %s as %s of %s (%s)\n", m.Email, m.Role, t.Slug, m.ID)
				if shown {
					fmt.Fprintf(w, "password: %s\n(shown once; change it in the dashboard)\n", pw)
				}
				return nil
			}},
		action{name: "list", args: "-tenant SLUG", help: "list the tenant's members", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				ms, err := a.ids.Store().ListMembers(ctx, t.ID)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, m := range ms {
					rows = append(rows, []string{m.Email, string(m.Role), m.ID.String()})
				}
				return table(w, "EMAIL\tROLE\tID", rows)
			}},
	)
}

func agentCommand() command {
	return bootstrapCommand("agent", "create and list a tenant's agents (AI employees)",
		"Agents are a tenant's AI employees; each calls Visor with its own key (see `visor key`).",
		action{name: "create", args: "-tenant SLUG -name NAME [-department D] [-role R] [-reports-to NAME]",
			help: "create an agent with default (nothing opted in) settings",
			flags: func(fs *flag.FlagSet) {
				tenantFlag(fs)
				fs.String("name", "", "agent name, 1-63 of a-z 0-9 - _ (required)")
				fs.String("department", "", "department")
				fs.String("role", "", "role")
				fs.String("reports-to", "", "name of the agent it reports to")
			},
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				if err := required(fs, "name"); err != nil {
					return err
				}
				in := identity.NewAgent{Name: str(fs, "name"), Department: str(fs, "department"), Role: str(fs, "role")}
				if boss := str(fs, "reports-to"); boss != "" {
					b, err := a.ids.Store().AgentByName(ctx, t.ID, boss)
					if err != nil {
						return fmt.Errorf("-reports-to: no agent %q in %s", boss, t.Slug)
					}
					in.ReportsTo = b.ID
				}
				ag, err := a.ids.CreateAgent(ctx, t.ID, in)
				if err != nil {
					return cliErr(err)
				}
				fmt.Fprintf(w, "created agent %s in %s (%s)\n", ag.Name, t.Slug, ag.ID)
				return nil
			}},
		action{name: "list", args: "-tenant SLUG", help: "list the tenant's agents, trashed ones included", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				as, err := a.ids.Store().ListAgents(ctx, t.ID)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, ag := range as {
					rows = append(rows, []string{ag.Name, ag.Department, ag.Role, string(ag.Status), ag.ID.String()})
				}
				return table(w, "NAME\tDEPARTMENT\tROLE\tSTATUS\tID", rows)
			}},
	)
}

func keyCommand() command {
	return bootstrapCommand("key", "create, list and revoke API keys",
		"Operator keys act as no agent and may use the admin API; agent keys act as one agent.",
		action{name: "create", args: "-tenant SLUG [-agent NAME] [-name NAME] [-scopes a,b]",
			help: "create a key and print its token once; with -agent it is that agent's key",
			flags: func(fs *flag.FlagSet) {
				tenantFlag(fs)
				fs.String("agent", "", "agent name (makes an agent key)")
				fs.String("name", "cli", "a name to recognize the key by")
				fs.String("scopes", "", "comma-separated scopes: "+strings.Join(identity.AllScopes, ","))
			},
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				in := identity.NewKey{Kind: identity.KeyOperator, Name: str(fs, "name")}
				if s := str(fs, "scopes"); s != "" {
					in.Scopes = strings.Split(s, ",")
				}
				if name := str(fs, "agent"); name != "" {
					ag, err := a.ids.Store().AgentByName(ctx, t.ID, name)
					if err != nil {
						return fmt.Errorf("-agent: no agent %q in %s", name, t.Slug)
					}
					in.Kind, in.AgentID = identity.KeyAgent, ag.ID
				}
				k, token, err := a.ids.CreateKey(ctx, t.ID, in)
				if err != nil {
					return cliErr(err)
				}
				fmt.Fprintf(w, "created %s key %s (%s)\n%s\n(the token is shown once)\n", k.Kind, k.Name, k.ID, token)
				return nil
			}},
		action{name: "list", args: "-tenant SLUG", help: "list the tenant's keys (never their secrets)", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				ks, err := a.ids.Store().ListKeys(ctx, t.ID)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, k := range ks {
					state := "live"
					if !k.Live(time.Now()) {
						state = "revoked/expired"
					}
					rows = append(rows, []string{k.ID.String(), string(k.Kind), k.Name, strings.Join(k.Scopes, ","), state})
				}
				return table(w, "ID\tKIND\tNAME\tSCOPES\tSTATE", rows)
			}},
		action{name: "revoke", args: "-tenant SLUG KEY_ID", help: "revoke a key", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, args []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				if len(args) != 1 {
					return fmt.Errorf("%s: name one key id", fs.Name())
				}
				id, err := uuid.Parse(args[0])
				if err != nil {
					return fmt.Errorf("%s: %q is not a key id", fs.Name(), args[0])
				}
				k, err := a.ids.RevokeKey(ctx, t.ID, id)
				if err != nil {
					return cliErr(err)
				}
				fmt.Fprintf(w, "revoked key %s (%s)\n", k.Name, k.ID)
				return nil
			}},
	)
}

// cliErr shows a domain error's caller-safe message.
func cliErr(err error) error {
	if c := fault.CodeOf(err); c != fault.Internal && c != "" {
		return fmt.Errorf("%s", fault.Message(err))
	}
	return err
}
