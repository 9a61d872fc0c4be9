package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
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
		action{name: "stdio-images", args: "-tenant SLUG [-add IMAGES] [-remove IMAGES]", audit: "updateTenant",
			help: "show or change the images the tenant's stdio MCP servers may run (settings.mcp_stdio_images)",
			flags: func(fs *flag.FlagSet) {
				tenantFlag(fs)
				fs.String("add", "", "comma-separated images to allow")
				fs.String("remove", "", "comma-separated images to take off (servers running them are refused at their next call)")
			},
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				add, remove := listFlag(str(fs, "add")), listFlag(str(fs, "remove"))
				if len(add)+len(remove) == 0 {
					noteTenant(ctx, uuid.Nil) // a read leaves no audit row
				} else {
					t, err = a.ids.UpdateTenant(ctx, t.ID, func(t *identity.Tenant) error {
						l := slices.DeleteFunc(t.Settings.MCPStdioImages, func(img string) bool { return slices.Contains(remove, img) })
						for _, img := range add {
							if !slices.Contains(l, img) {
								l = append(l, img)
							}
						}
						t.Settings.MCPStdioImages = l
						return nil
					})
					if err != nil {
						return cliErr(err)
					}
					noteObject(ctx, "tenant", t.ID)
				}
				if len(t.Settings.MCPStdioImages) == 0 {
					fmt.Fprintf(w, "tenant %s allows no stdio image\n", t.Slug)
					return nil
				}
				fmt.Fprintf(w, "tenant %s allows these stdio images (each must be on the stdio worker's VISOR_MCP_STDIO_IMAGES too):\n", t.Slug)
				for _, img := range t.Settings.MCPStdioImages {
					fmt.Fprintln(w, "  "+img)
				}
				return nil
			}},
	)
}
