package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

func keyCommand() command {
	return bootstrapCommand("key", "create, list and revoke API keys",
		"Operator keys act as no agent; agent keys act as one agent. A key's scopes bind it on the admin API and the MCP\n"+
			"endpoint alike (default: every scope for an operator key, every tool scope for an agent key).",
		action{name: "create", args: "-tenant SLUG [-agent NAME] [-name NAME] [-scopes a,b]", audit: "createKey",
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
					ag, err := a.ids.AgentByName(ctx, t.ID, name)
					if err != nil {
						return fmt.Errorf("-agent: no agent %q in %s", name, t.Slug)
					}
					in.Kind, in.AgentID = identity.KeyAgent, ag.ID
				}
				k, token, err := a.ids.CreateKey(ctx, t.ID, in)
				if err != nil {
					return cliErr(err)
				}
				noteObject(ctx, "key", k.ID)
				fmt.Fprintf(w, "created %s key %s (%s)\n%s\n(the token is shown once)\n", k.Kind, k.Name, k.ID, token)
				return nil
			}},
		action{name: "list", args: "-tenant SLUG", help: "list the tenant's keys (never their secrets)", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				ks, err := a.ids.ListKeys(ctx, t.ID)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, k := range ks {
					state := "live"
					if !k.Live(time.Now()) {
						state = "revoked/expired"
					}
					by := k.CreatedBy
					if by == "" {
						by = "-"
					}
					rows = append(rows, []string{k.ID.String(), string(k.Kind), k.Name, strings.Join(k.Scopes, ","), state, by})
				}
				return table(w, "ID\tKIND\tNAME\tSCOPES\tSTATE\tCREATED BY", rows)
			}},
		action{name: "revoke", args: "-tenant SLUG KEY_ID", help: "revoke a key", flags: tenantFlag, audit: "revokeKey",
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
				noteObject(ctx, "key", id)
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
