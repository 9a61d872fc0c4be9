package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/visorhq/visor/services/identity"
)

func agentCommand() command {
	return bootstrapCommand("agent", "create and list a tenant's agents (AI employees)",
		"Agents are a tenant's AI employees; each calls Visor with its own key (see `visor key`).",
		action{name: "create", args: "-tenant SLUG -name NAME [-department D] [-role R] [-reports-to NAME]", audit: "createAgent",
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
					b, err := a.ids.AgentByName(ctx, t.ID, boss)
					if err != nil {
						return fmt.Errorf("-reports-to: no agent %q in %s", boss, t.Slug)
					}
					in.ReportsTo = b.ID
				}
				ag, err := a.ids.CreateAgent(ctx, t.ID, in)
				if err != nil {
					return cliErr(err)
				}
				noteObject(ctx, "agent", ag.ID)
				fmt.Fprintf(w, "created agent %s in %s (%s)\n", ag.Name, t.Slug, ag.ID)
				return nil
			}},
		action{name: "list", args: "-tenant SLUG", help: "list the tenant's agents, trashed ones included", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				as, err := a.ids.ListAgents(ctx, t.ID)
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
