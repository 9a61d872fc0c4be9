package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
)

// memoryCommand is the operator's side of what AI employees remember:
// list where it came from and forget a source. No MCP tool forgets.
func memoryCommand() command {
	return bootstrapCommand("memory", "list the sources of AI employees' knowledge and forget one",
		"Every memory, hand-off, belief and wiki write records its source: a round (round:<id>), a responsibility run "+
			"(run:<id>) or a single call (call:<id>). Forgetting a source removes what it stored and refuses later writes from it; "+
			"wiki pages it wrote are listed for review, never deleted.",
		action{name: "list", args: "-tenant SLUG [-agent NAME]", help: "list the sources, newest first (at most 500)",
			flags: func(fs *flag.FlagSet) {
				tenantFlag(fs)
				fs.String("agent", "", "only this agent's sources")
			},
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				var ag identity.Agent
				if name := str(fs, "agent"); name != "" {
					if ag, err = a.ids.AgentByName(ctx, t.ID, name); err != nil {
						return fmt.Errorf("-agent: no agent %q in %s", name, t.Slug)
					}
				}
				srcs, err := a.knowledge.Sources(ctx, cliOperator(t), ag, 500)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, s := range srcs {
					forgotten := ""
					if s.ForgottenAt != nil {
						forgotten = s.ForgottenAt.UTC().Format("2006-01-02 15:04")
					}
					rows = append(rows, []string{s.Key, s.Principal, s.CreatedAt.UTC().Format("2006-01-02 15:04"), forgotten})
				}
				return table(w, "SOURCE\tWRITER\tFIRST WRITE\tFORGOTTEN", rows)
			}},
		action{name: "forget-source", args: "-tenant SLUG -source KEY", audit: "forgetKnowledgeSource",
			help: "forget a source: remove what it stored, refuse later writes from it, list wiki pages to review",
			flags: func(fs *flag.FlagSet) {
				tenantFlag(fs)
				fs.String("source", "", "the source key, e.g. round:<uuid> (required)")
			},
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				if err := required(fs, "source"); err != nil {
					return err
				}
				f, err := a.knowledge.Forget(ctx, cliOperator(t), str(fs, "source"))
				if err != nil {
					return cliErr(err)
				}
				printForgotten(w, f)
				return nil
			}},
	)
}

// cliOperator is the principal the CLI acts as in t: an operator.
func cliOperator(t identity.Tenant) identity.Principal {
	return identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindOperator, CredentialID: "system/cli"}
}

func printForgotten(w io.Writer, f knowledge.Forgotten) {
	if f.Already {
		fmt.Fprintf(w, "%s was already forgotten; ", f.Source.Key)
	} else {
		fmt.Fprintf(w, "forgot %s: ", f.Source.Key)
	}
	fmt.Fprintf(w, "%d memories, %d hand-offs and %d beliefs removed; later writes from it are refused\n", f.Memories, f.Handoffs, f.Beliefs)
	if len(f.Review) == 0 {
		return
	}
	fmt.Fprintf(w, "%d wiki pages name it in host_sources; review them (they are kept):\n", len(f.Review))
	for _, p := range f.Review {
		wiki := "shared"
		if !p.Shared() {
			wiki = "agent " + p.AgentID.String()
		}
		fmt.Fprintf(w, "  %s  (%s wiki, revision %d)\n", p.Path, wiki, p.Revision)
	}
}
