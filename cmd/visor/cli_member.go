package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/visorhq/visor/services/identity"
)

func memberCommand() command {
	return bootstrapCommand("member", "add and list a tenant's members (dashboard users)",
		"Members sign in to the dashboard and approve OAuth consent. Roles: owner, admin, operator, viewer.",
		action{name: "create", args: "-tenant SLUG -email EMAIL [-role owner] [-password PW]", audit: "createMember",
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
				noteObject(ctx, "member", m.ID)
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
				ms, err := a.ids.ListMembers(ctx, t.ID)
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
