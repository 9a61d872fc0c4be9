package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/secrets"
)

func dbsourceCommand() command {
	return bootstrapCommand("dbsource", "manage a tenant's database sources (the db_* tools)",
		"A database source is a tenant's Postgres or MySQL/MariaDB database that AI employees whose settings name it may read\n"+
			"(docs/db-sources.md). The password is sealed with VISOR_SECRET_KEYS and never shown again; pass it in the\n"+
			"connection string or, to keep it out of shell history, on standard input with -password-stdin.",
		action{name: "add", args: "-tenant SLUG -name NAME -connection-string URL [-password-stdin] [limits and allow lists]", audit: "createDBSource",
			help: "add a source after a test connection", flags: dbsourceFlags(true),
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				return saveDBSource(ctx, a, w, fs, true)
			}},
		action{name: "update", args: "-tenant SLUG -name NAME [-connection-string URL] [-password-stdin] [limits and allow lists]", audit: "updateDBSource",
			help: "replace a source's settings (flags left out keep their values) after a test connection", flags: dbsourceFlags(false),
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				return saveDBSource(ctx, a, w, fs, false)
			}},
		action{name: "list", args: "-tenant SLUG", help: "list the tenant's sources (passwords are never shown)", flags: tenantFlag,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				list, err := a.dbSources.List(ctx, t.ID)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, s := range list {
					rows = append(rows, []string{s.Name, s.Endpoint.String(s.Kind), strconv.FormatBool(s.PasswordSet),
						strings.Join(append(s.Schemas, s.Tables...), ","), s.ID.String()})
				}
				return table(w, "NAME\tCONNECTION\tPASSWORD SET\tALLOW LISTS\tID", rows)
			}},
		action{name: "test", args: "-tenant SLUG -name NAME", audit: "testDBSource", help: "connect to a saved source as a save does", flags: nameFlags,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				s, err := a.dbSources.Test(ctx, t.ID, str(fs, "name"))
				if err != nil {
					return cliErr(err)
				}
				noteObject(ctx, "db_source", s.ID)
				fmt.Fprintf(w, "connected to %s (%s)\n", s.Name, s.Endpoint.String(s.Kind))
				return nil
			}},
		action{name: "remove", args: "-tenant SLUG -name NAME", audit: "deleteDBSource",
			help: "remove a source and its name from every AI employee's settings", flags: nameFlags,
			run: func(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, _ []string) error {
				t, err := lookupTenant(ctx, a, fs)
				if err != nil {
					return err
				}
				s, err := a.dbSources.Source(ctx, t.ID, str(fs, "name"))
				if err != nil {
					return cliErr(err)
				}
				if _, err := a.dbSources.Remove(ctx, t.ID, s.ID); err != nil {
					return cliErr(err)
				}
				noteObject(ctx, "db_source", s.ID)
				fmt.Fprintf(w, "removed source %s from %s\n", s.Name, t.Slug)
				return nil
			}},
	)
}

func nameFlags(fs *flag.FlagSet) {
	tenantFlag(fs)
	fs.String("name", "", "source name (required)")
}

func dbsourceFlags(add bool) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		nameFlags(fs)
		fs.String("connection-string", "", "postgres://user[:password]@host:5432/db?sslmode=require or mysql://… (required for add)")
		fs.Bool("password-stdin", false, "read the password from the first line of standard input")
		fs.String("schemas", "", "comma-separated schema allow list (empty: all the role may read)")
		fs.String("tables", "", "comma-separated schema.table allow list (empty: all)")
		fs.Duration("statement-timeout", 0, "server-side statement timeout (default 10s, at most 300s)")
		fs.Int("max-rows", 0, "rows per answer (default 500, at most 10000)")
		fs.Int("max-bytes", 0, "bytes per answer (default 262144, at most 4194304)")
		fs.Int("max-concurrent", 0, "queries at once on one replica (default 2, at most 32)")
		fs.String("description", "", "what the source holds, for the AI employees")
	}
}

// saveDBSource adds or updates a source from the flags; on an update the
// flags left out keep the source's values.
func saveDBSource(ctx context.Context, a *app, w io.Writer, fs *flag.FlagSet, add bool) error {
	t, err := lookupTenant(ctx, a, fs)
	if err != nil {
		return err
	}
	if err := required(fs, "name"); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	in := dbsources.Input{Name: str(fs, "name")}
	var old dbsources.Source
	if !add {
		if old, err = a.dbSources.Source(ctx, t.ID, in.Name); err != nil {
			return cliErr(err)
		}
		in.Schemas, in.Tables, in.Limits, in.Description = old.Schemas, old.Tables, old.Limits, old.Description
	}
	if in.URL, err = connectionString(str(fs, "connection-string"), set["password-stdin"]); err != nil {
		return err
	}
	if set["schemas"] {
		in.Schemas = splitList(str(fs, "schemas"))
	}
	if set["tables"] {
		in.Tables = splitList(str(fs, "tables"))
	}
	if set["description"] {
		in.Description = str(fs, "description")
	}
	if set["statement-timeout"] {
		in.Limits.StatementTimeout = fs.Lookup("statement-timeout").Value.(flag.Getter).Get().(time.Duration)
	}
	for flagName, field := range map[string]*int{"max-rows": &in.Limits.MaxRows, "max-bytes": &in.Limits.MaxBytes, "max-concurrent": &in.Limits.MaxConcurrent} {
		if set[flagName] {
			*field = fs.Lookup(flagName).Value.(flag.Getter).Get().(int)
		}
	}
	var s dbsources.Source
	if add {
		s, err = a.dbSources.Create(ctx, t.ID, in, cliActor())
	} else {
		s, err = a.dbSources.Update(ctx, t.ID, old.ID, in)
	}
	if err != nil {
		return cliErr(err)
	}
	noteObject(ctx, "db_source", s.ID)
	fmt.Fprintf(w, "saved source %s in %s: %s (password set: %t)\n", s.Name, t.Slug, s.Endpoint.String(s.Kind), s.PasswordSet)
	return nil
}

// connectionString returns raw with the password read from standard input
// when asked.
func connectionString(raw string, fromStdin bool) (string, error) {
	if !fromStdin {
		return raw, nil
	}
	if raw == "" {
		return "", fmt.Errorf("-password-stdin needs -connection-string")
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("-password-stdin: nothing to read on standard input")
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return "", fmt.Errorf("-connection-string must name a user to go with the password")
	}
	u.User = url.UserPassword(u.User.Username(), strings.TrimRight(line, "\r\n"))
	return u.String(), nil
}

func splitList(s string) []string {
	out := []string{}
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func secretsCommand() command {
	return command{
		name: "secrets", args: "rotate",
		summary: "re-wrap every stored secret under the first key of VISOR_SECRET_KEYS",
		detail: `Rotation of the key-encryption key (docs/secrets.md): put a new key first in
VISOR_SECRET_KEYS and keep the old one after it, restart, run "visor secrets rotate"
(re-wraps each secret's data key under the new key, in one transaction), then remove
the old key. Running it again changes nothing.`,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			if err := parse(fs, args); err != nil {
				return err
			}
			if len(fs.Args()) != 1 || fs.Arg(0) != "rotate" {
				fs.Usage()
				return errUsage
			}
			cfg, err := LoadConfig(e.getenv)
			if err != nil {
				return err
			}
			if cfg.Secrets.Keys == nil {
				return fmt.Errorf("VISOR_SECRET_KEYS is not set; there is no key to rotate to (docs/secrets.md)")
			}
			a, err := openApp(ctx, cfg, newLogger(cfg, e.stderr), nil, appNeeds{schemaCheck: true})
			if err != nil {
				return err
			}
			defer a.Close()
			n, err := secrets.Rotate(ctx, cfg.Secrets.Keys, a.stores.dbSources, a.stores.upstreams, a.stores.workspace)
			if err != nil {
				return fmt.Errorf("rotation stopped, nothing changed: %w", err)
			}
			fmt.Fprintf(e.stdout, "re-wrapped %d secret(s) under key %q; keys %v may now be removed\n", n, cfg.Secrets.Keys.Primary(), cfg.Secrets.Keys.IDs()[1:])
			return nil
		},
	}
}
