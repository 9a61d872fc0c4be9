package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

func upstreamCommand() command {
	serverAction := func(name, help, audit string, do func(ctx context.Context, a *app, tenant uuid.UUID, ref string) (upstreams.Server, error)) action {
		return action{name: name, args: "-tenant SLUG -name NAME", audit: audit, help: help, flags: nameFlagsFor("server"),
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				if err := required(fs, "name"); err != nil {
					return err
				}
				s, err := do(ctx, a, t.ID, str(fs, "name"))
				if err != nil {
					return cliErr(err)
				}
				noteObject(ctx, "mcp_server", s.ID)
				fmt.Fprintf(w, "%s: %s (enabled %t, %d tools)%s\n", name, s.Name, s.Enabled, s.ToolCount, lastError(s))
				return nil
			}}
	}
	return bootstrapCommand("upstream", "manage a tenant's upstream MCP servers (the mcp_* tools)",
		"An upstream MCP server is another MCP server of the tenant, reached by its callers through mcp_tool_search,\n"+
			"mcp_tool_inspect and mcp_tool_call (docs/upstream-mcp.md). Secrets (headers such as Authorization, environment\n"+
			"values, the OAuth client secret) are sealed with VISOR_SECRET_KEYS and never shown again; pass a value on standard\n"+
			"input with -secret-value-stdin or -client-secret-stdin.",
		action{name: "add", args: "-tenant SLUG -name NAME (-url URL [-transport sse] | -transport stdio -image IMAGE [-command CMD] [-allow-hosts HOSTS]) [-auth …] [limits]", audit: "createMCPServer",
			help: "add a server (a URL through the outbound guard, or an image on the tenant's list) and list its tools", flags: upstreamFlags,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				return saveUpstream(ctx, a, w, fs, true)
			}},
		action{name: "update", args: "-tenant SLUG -name NAME [-url URL] [-image IMAGE] [-auth …] [limits]", audit: "updateMCPServer",
			help: "change a server (flags left out keep their values) and list its tools again", flags: upstreamFlags,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				return saveUpstream(ctx, a, w, fs, false)
			}},
		action{name: "list", args: "-tenant SLUG", help: "list the tenant's servers (secrets are named, never shown)", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				list, err := a.upstreams.List(ctx, t.ID)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, s := range list {
					var secs []string
					for _, sec := range s.Secrets {
						secs = append(secs, string(sec.Kind)+":"+sec.Name)
					}
					where := s.URL
					if s.Transport == upstreams.Stdio {
						where = s.Image
					}
					rows = append(rows, []string{s.Name, string(s.Transport), where, strconv.FormatBool(s.Enabled), strconv.Itoa(s.ToolCount),
						strings.Join(secs, ","), s.LastError})
				}
				return table(w, "NAME\tTRANSPORT\tURL/IMAGE\tENABLED\tTOOLS\tSECRETS\tLAST ERROR", rows)
			}},
		serverAction("refresh", "list a server's tools again", "refreshMCPServer", func(ctx context.Context, a *app, tenant uuid.UUID, ref string) (upstreams.Server, error) {
			return a.upstreams.Refresh(ctx, tenant, ref)
		}),
		serverAction("enable", "switch a server on (its tools return to search)", "updateMCPServer", func(ctx context.Context, a *app, tenant uuid.UUID, ref string) (upstreams.Server, error) {
			return a.upstreams.SetEnabled(ctx, tenant, ref, true)
		}),
		serverAction("disable", "switch a server off (its tools leave search and are refused at once)", "updateMCPServer", func(ctx context.Context, a *app, tenant uuid.UUID, ref string) (upstreams.Server, error) {
			return a.upstreams.SetEnabled(ctx, tenant, ref, false)
		}),
		serverAction("remove", "remove a server, its secrets and tools; revoke the tokens Visor held", "deleteMCPServer", func(ctx context.Context, a *app, tenant uuid.UUID, ref string) (upstreams.Server, error) {
			return a.upstreams.Remove(ctx, tenant, ref)
		}),
		action{name: "secret-set", args: "-tenant SLUG -name NAME -kind header|env -variable NAME (-secret-value V | -secret-value-stdin)", audit: "setMCPServerSecret",
			help: "set one secret of a server, sealed at rest", flags: secretFlags(true),
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				return upstreamSecret(ctx, a, w, fs, true)
			}},
		action{name: "secret-unset", args: "-tenant SLUG -name NAME -kind header|env -variable NAME", audit: "deleteMCPServerSecret",
			help: "remove one secret of a server", flags: secretFlags(false),
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				return upstreamSecret(ctx, a, w, fs, false)
			}},
	)
}

func nameFlagsFor(what string) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		tenantFlag(fs)
		fs.String("name", "", what+" name (required)")
	}
}

func upstreamFlags(fs *flag.FlagSet) {
	nameFlagsFor("server")(fs)
	fs.String("transport", "", "streamable_http (default), sse or stdio")
	fs.String("url", "", "a remote server's endpoint, https://… (required to add one)")
	fs.String("image", "", "a stdio server's image, on the tenant's list (`visor tenant stdio-images`) and the stdio worker's")
	fs.String("command", "", "a stdio server's command and arguments, split on spaces, or a JSON array of strings (empty: the image's own)")
	fs.String("allow-hosts", "", "comma-separated hosts a stdio server may reach over HTTPS (empty: no network)")
	fs.String("auth", "", "none (default), client_credentials or oauth (authorization code, Connect in the dashboard); a static bearer is a secret header: secret-set -variable Authorization")
	fs.String("client-id", "", "the OAuth client id (empty with oauth: Visor registers itself)")
	fs.Bool("client-secret-stdin", false, "read the OAuth client secret from the first line of standard input")
	fs.String("scopes", "", "comma-separated OAuth scopes to ask for")
	fs.Bool("per-member", false, "oauth: one token per member (each Connects), not one for the tenant")
	fs.Duration("timeout", 0, "time one call may take (default 30s, at most 300s)")
	fs.Int("max-concurrent", 0, "calls at once on one replica (default 8, at most 64)")
	fs.Int("max-result-bytes", 0, "bytes of one result (default 1048576, at most 8388608)")
	fs.String("description", "", "a note for operators")
	fs.Bool("disabled", false, "save the server switched off")
}

func lastError(s upstreams.Server) string {
	if s.LastError == "" {
		return ""
	}
	return "; last refresh failed: " + s.LastError
}

// saveUpstream adds or updates a server from the flags; on an update the
// flags left out keep the server's values.
func saveUpstream(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, add bool) error {
	t, err := lookupTenant(ctx, a, fs)
	if err != nil {
		return err
	}
	if err := required(fs, "name"); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	in := upstreams.Input{Name: str(fs, "name"), Transport: upstreams.StreamableHTTP}
	var old upstreams.Server
	if !add {
		if old, err = a.upstreams.Server(ctx, t.ID, in.Name); err != nil {
			return cliErr(err)
		}
		in = upstreams.Input{Name: old.Name, Transport: old.Transport, URL: old.URL, Image: old.Image, Command: old.Command,
			AllowHosts: old.AllowHosts, Auth: old.Auth, Limits: old.Limits, Description: old.Description, Disabled: !old.Enabled}
	}
	if err := upstreamInput(fs, set, &in); err != nil {
		return err
	}
	clientSecret := ""
	if set["client-secret-stdin"] && boolFlag(fs, "client-secret-stdin") {
		if clientSecret, err = readStdinLine(ctx, "client-secret-stdin"); err != nil {
			return err
		}
	}
	var s upstreams.Server
	if add {
		s, err = a.upstreams.Create(ctx, t.ID, in, cliActor())
	} else {
		s, err = a.upstreams.Update(ctx, t.ID, old.ID.String(), in)
	}
	if err != nil {
		return cliErr(err)
	}
	noteObject(ctx, "mcp_server", s.ID)
	if clientSecret != "" {
		if s, err = a.upstreams.SetSecret(ctx, t.ID, s.ID.String(), upstreams.SecretClientSecret, "client_secret", clientSecret); err != nil {
			return cliErr(err)
		}
		if s.Enabled && s.Auth.Kind == upstreams.AuthClientCredentials { // list its tools with the secret
			if _, err := a.upstreams.Refresh(ctx, t.ID, s.ID.String()); err != nil && !fault.Is(err, fault.Unavailable) {
				return cliErr(err)
			}
			if s, err = a.upstreams.Server(ctx, t.ID, s.ID.String()); err != nil {
				return cliErr(err)
			}
		}
	}
	where := s.URL
	if s.Transport == upstreams.Stdio {
		where = s.Image
	}
	fmt.Fprintf(w, "saved server %s in %s: %s, auth %s (%d tools)%s\n", s.Name, t.Slug, where, s.Auth.Kind, s.ToolCount, lastError(s))
	return nil
}

// upstreamInput applies the flags that were set onto in.
func upstreamInput(fs *flag.FlagSet, set map[string]bool, in *upstreams.Input) error {
	if set["transport"] {
		in.Transport = upstreams.Transport(str(fs, "transport"))
	}
	if set["url"] {
		in.URL = str(fs, "url")
	}
	if set["image"] {
		in.Image = str(fs, "image")
	}
	if set["command"] {
		cmd, err := commandFlag(str(fs, "command"))
		if err != nil {
			return err
		}
		in.Command = cmd
	}
	if set["allow-hosts"] {
		in.AllowHosts = listFlag(str(fs, "allow-hosts"))
	}
	if set["auth"] && upstreams.AuthKind(str(fs, "auth")) != in.Auth.Kind {
		in.Auth = upstreams.Auth{Kind: upstreams.AuthKind(str(fs, "auth"))} // another kind keeps nothing of the last
	}
	if set["client-id"] {
		in.Auth.ClientID = str(fs, "client-id")
	}
	if set["scopes"] {
		in.Auth.Scopes = listFlag(str(fs, "scopes"))
	}
	if set["per-member"] {
		in.Auth.PerMember = boolFlag(fs, "per-member")
	}
	if set["description"] {
		in.Description = str(fs, "description")
	}
	if set["disabled"] {
		in.Disabled = boolFlag(fs, "disabled")
	}
	if set["timeout"] {
		in.Limits.Timeout = fs.Lookup("timeout").Value.(flag.Getter).Get().(time.Duration)
	}
	for flagName, field := range map[string]*int{"max-concurrent": &in.Limits.MaxConcurrent, "max-result-bytes": &in.Limits.MaxResultBytes} {
		if set[flagName] {
			*field = fs.Lookup(flagName).Value.(flag.Getter).Get().(int)
		}
	}
	return nil
}

func boolFlag(fs *flag.FlagSet, name string) bool {
	return fs.Lookup(name).Value.(flag.Getter).Get().(bool)
}

// listFlag splits a comma-separated flag, dropping empty entries.
func listFlag(v string) []string {
	var l []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			l = append(l, e)
		}
	}
	return l
}

// commandFlag reads -command: a JSON array of strings, or words split on
// spaces.
func commandFlag(v string) ([]string, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "[") {
		var l []string
		if err := json.Unmarshal([]byte(v), &l); err != nil {
			return nil, fmt.Errorf("-command: %q is not a JSON array of strings", v)
		}
		return l, nil
	}
	return strings.Fields(v), nil
}

func secretFlags(set bool) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		nameFlagsFor("server")(fs)
		fs.String("kind", "header", "header (a remote server's) or env (a stdio server's)")
		fs.String("variable", "", "the header or environment variable name (required)")
		if set {
			fs.String("secret-value", "", "the value (visible in shell history; prefer -secret-value-stdin)")
			fs.Bool("secret-value-stdin", false, "read the value from the first line of standard input")
		}
	}
}

func upstreamSecret(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, set bool) error {
	t, err := lookupTenant(ctx, a, fs)
	if err != nil {
		return err
	}
	if err := required(fs, "name", "variable"); err != nil {
		return err
	}
	kind, name := upstreams.SecretKind(str(fs, "kind")), str(fs, "variable")
	var s upstreams.Server
	if !set {
		s, err = a.upstreams.UnsetSecret(ctx, t.ID, str(fs, "name"), kind, name)
	} else {
		value := str(fs, "secret-value")
		if boolFlag(fs, "secret-value-stdin") {
			if value, err = readStdinLine(ctx, "secret-value-stdin"); err != nil {
				return err
			}
		}
		s, err = a.upstreams.SetSecret(ctx, t.ID, str(fs, "name"), kind, name, value)
	}
	if err != nil {
		return cliErr(err)
	}
	noteObject(ctx, "mcp_server", s.ID)
	fmt.Fprintf(w, "%s %s of %s; secrets: %d (values are never shown)\n", map[bool]string{true: "set", false: "removed"}[set], name, s.Name, len(s.Secrets))
	return nil
}
