package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"
)

func tenantCommand() command {
	return bootstrapCommand("tenant", "create and list tenants", "Tenants are organizations; everything else belongs to one.",
		action{name: "create", args: "-slug SLUG -name NAME", help: "create a tenant", audit: "createTenant",
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
				noteTenant(ctx, t.ID) // a new tenant's first row is its creation
				noteObject(ctx, "tenant", t.ID)
				fmt.Fprintf(w, "created tenant %s (%s)\n", t.Slug, t.ID)
				return nil
			}},
		action{name: "list", help: "list every tenant",
			run: func(ctx context.Context, a *app, w io.Writer, _ *flag.FlagSet, _ []string) error {
				ts, err := a.ids.ListTenants(ctx)
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
