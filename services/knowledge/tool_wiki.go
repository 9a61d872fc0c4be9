package knowledge

import (
	"context"
	"fmt"
	"strings"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

func (svc *Service) registerWiki(reg *tools.Registry) {
	scope := tools.Param{Name: "scope", Type: "string", Description: "own (your wiki, the default for an AI employee) or shared (the tenant's)."}
	reg.Register(tools.Tool{
		Name:        "wiki_write",
		Description: "Create or rewrite a page of your wiki or the shared one. Visor stamps host_sources in its frontmatter (newest 20); any you write is dropped.",
		Params: []tools.Param{
			scope,
			{Name: "path", Type: "string", Required: true, Description: "Page path: slash-separated names (letters, digits, inner spaces, - _ .), at most 200 bytes."},
			{Name: "content", Type: "string", Required: true, Description: "The whole page, Markdown with optional frontmatter (at most 64 KiB)."},
		},
		Scope: identity.ScopeToolsWrite, Family: family,
		Annotations: tools.Annotations{Title: "Write a wiki page", Idempotent: true},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			p, err := svc.WriteWiki(ctx, c.Principal(), c.ID, WikiScope(str(c.Args, "scope")), str(c.Args, "path"), str(c.Args, "content"))
			if err != nil {
				return nil, err
			}
			return &tools.Result{Text: fmt.Sprintf("Wrote %s (revision %d).", p.Path, p.Revision),
				Structured: map[string]any{"path": p.Path, "revision": p.Revision, "host_sources": p.HostSources}}, nil
		},
	})
	reg.Register(tools.Tool{
		Name:        "wiki_read",
		Description: "Read a page of your wiki or the shared one (fenced as data, with injection flags), or list the pages when path is empty.",
		Params: []tools.Param{
			scope,
			{Name: "path", Type: "string", Description: "Page path; empty lists the wiki's pages."},
		},
		Scope: identity.ScopeToolsRead, Family: family,
		Annotations: tools.Annotations{Title: "Read a wiki page", ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			sc := WikiScope(str(c.Args, "scope"))
			if sc == "" && !c.Principal().IsEmployee() {
				sc = ScopeShared
			}
			path := str(c.Args, "path")
			if path == "" {
				pages, err := svc.ListWiki(ctx, c.Principal(), sc, 500)
				if err != nil {
					return nil, err
				}
				paths := make([]string, len(pages))
				for i, p := range pages {
					paths[i] = p.Path
				}
				return &tools.Result{Text: fmt.Sprintf("%d pages:\n%s", len(paths), strings.Join(paths, "\n")),
					Structured: map[string]any{"paths": paths}}, nil
			}
			p, err := svc.ReadWiki(ctx, c.Principal(), sc, path)
			if err != nil {
				return nil, err
			}
			text := p.Render()
			flags := Scan(text)
			return &tools.Result{Text: Fence("wiki_page", text, flags, "path", p.Path, "revision", fmt.Sprint(p.Revision)),
				Structured: map[string]any{"path": p.Path, "revision": p.Revision, "host_sources": p.HostSources,
					"updated_at": p.UpdatedAt, "injection_flags": flags}}, nil
		},
	})
	reg.Register(tools.Tool{
		Name:         "shared_wiki_delete",
		Description:  "Delete a page of the tenant's shared wiki.",
		Params:       []tools.Param{{Name: "path", Type: "string", Required: true, Description: "The page's path."}},
		Scope:        identity.ScopeToolsWrite,
		Family:       family,
		ProcessAgent: true,
		Annotations:  tools.Annotations{Title: "Delete a shared wiki page", Destructive: &destructive},
		Handler: func(ctx context.Context, c tools.Call) (*tools.Result, error) {
			path := str(c.Args, "path")
			if err := svc.DeleteShared(ctx, c.Principal(), path); err != nil {
				return nil, err
			}
			return &tools.Result{Text: "Deleted shared page " + path + ".", Structured: map[string]any{"path": path, "deleted": true}}, nil
		},
	})
}

// destructive marks the tools that remove something.
var destructive = true
