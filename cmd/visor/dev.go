package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5"
)

func devCommand() command {
	return command{
		name: "dev", args: "[-json FILE]",
		summary: "one-command local start: create the database, migrate, seed a demo tenant, serve with a worker",
		detail: `Creates the database in VISOR_DATABASE_URL if it is missing, applies every
migration, makes sure a demo tenant exists with an owner member, an agent
("assistant"), an operator key and an agent key, then serves HTTP with the job
worker in the same process and prints the URLs and credentials.

Keys are shown once by design, so dev keeps the demo credentials in
VISOR_DEV_DIR/credentials.json (default .dev/, ignored by git, mode 0600) and
reuses them on the next run after checking they still work; any that no longer
work (new database, revoked key) are replaced. Delete the file to mint fresh
ones. Listens on 127.0.0.1:8080 unless VISOR_HTTP_ADDR says otherwise, and logs
as text unless VISOR_LOG_FORMAT says otherwise. Without VISOR_SECRET_KEYS it makes
a key for stored secrets once and keeps it in VISOR_DEV_DIR/secret-keys; database
sources may reach this machine (VISOR_DB_ALLOWED_NETWORKS defaults to loopback).`,
		run: runDev,
	}
}

// devDefaults are dev's own defaults for variables left unset.
var devDefaults = map[string]string{"VISOR_HTTP_ADDR": "127.0.0.1:8080", "VISOR_LOG_FORMAT": "text"}

func runDev(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	jsonFile := fs.String("json", "", "also write the URLs and credentials to `FILE` as JSON (for scripts)")
	if err := parse(fs, args); err != nil {
		return err
	}
	defaults := map[string]string{"VISOR_DB_ALLOWED_NETWORKS": devDBNetworks}
	if e.getenv("VISOR_SECRET_KEYS") == "" {
		keys, err := devSecretKeys(e.getenv)
		if err != nil {
			return err
		}
		defaults["VISOR_SECRET_KEYS"] = keys
	}
	cfg, err := LoadConfig(func(k string) string {
		if v := e.getenv(k); v != "" {
			return v
		}
		if v, ok := defaults[k]; ok {
			return v
		}
		return devDefaults[k]
	})
	if err != nil {
		return err
	}
	log := newLogger(cfg, e.stderr)
	st := &steps{w: e.stdout, total: 5}
	if err := st.run("Database", func() (string, error) { return ensureDatabase(ctx, cfg.DatabaseURL) }); err != nil {
		return err
	}
	if err := st.run("Migrations", func() (string, error) { return migrateDev(ctx, cfg) }); err != nil {
		return err
	}
	st.begin("Sandbox")
	st.end(devSandbox(ctx, &cfg, e.getenv("VISOR_SANDBOX_WORKER"), dockerImageProbe))
	st.begin("Listening")
	err = serve(ctx, e, cfg, log, serveOptions{withWorker: true, service: "dev", onReady: func(a *app, base string) error {
		st.end(base + " (Redis connected, job worker running in this process)")
		var creds devCredentials
		err := st.run("Demo data", func() (string, error) {
			var err error
			if creds, err = seedDemo(ctx, a, base); err != nil {
				return "", fmt.Errorf("seed the demo tenant: %w", err)
			}
			return fmt.Sprintf("tenant %q with owner %s, agent %q and their keys", creds.Tenant, creds.OwnerEmail, creds.Agent), nil
		})
		if err != nil {
			return err
		}
		printDevBanner(e.stdout, creds, cfg.DevDir)
		if *jsonFile != "" {
			return writeJSONFile(*jsonFile, creds, 0o600)
		}
		return nil
	}})
	st.fail(err)
	return err
}

// steps prints visor dev's progress on stdout, one line per step, so a
// first run that waits on Postgres or a long migration shows where it is.
type steps struct {
	w        io.Writer
	n, total int
	open     bool // a step's line awaits its end
}

func (s *steps) begin(name string) {
	s.n++
	s.open = true
	fmt.Fprintf(s.w, "[%d/%d] %-13s ", s.n, s.total, name+"...")
}

// end finishes the open step's line with what it did.
func (s *steps) end(did string) {
	s.open = false
	fmt.Fprintln(s.w, did)
}

// fail finishes the open step's line, if any, when err is not nil; the
// error itself is reported by the caller.
func (s *steps) fail(err error) {
	if err != nil && s.open {
		s.end("failed")
	}
}

// run runs one step between begin and end.
func (s *steps) run(name string, step func() (string, error)) error {
	s.begin(name)
	did, err := step()
	if err != nil {
		s.fail(err)
		return err
	}
	s.end(did)
	return nil
}

// migrateDev applies every pending migration and says how many.
func migrateDev(ctx context.Context, cfg Config) (string, error) {
	db, err := openPostgres(ctx, cfg, nil)
	if err != nil {
		return "", err
	}
	defer db.Close()
	applied, err := db.MigrateUp(ctx)
	if err != nil {
		return "", err
	}
	if len(applied) == 0 {
		return "the schema is current", nil
	}
	return fmt.Sprintf("applied %d, the schema is current", len(applied)), nil
}

// ensureDatabase creates the database named in url when it does not exist,
// connecting to the server's "postgres" database to do so, and says which
// it found or made.
func ensureDatabase(ctx context.Context, url string) (string, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "", fmt.Errorf("VISOR_DATABASE_URL: the URL is malformed")
	}
	name := cfg.Database
	where := fmt.Sprintf("%q on %s", name, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	cfg.Database = "postgres"
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("cannot use Postgres (%s); start Postgres or set VISOR_DATABASE_URL", oneLine(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look for database %q: %s", name, oneLine(err))
	}
	if exists {
		return "using " + where, nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %q: %s; create it yourself or set VISOR_DATABASE_URL", name, oneLine(err))
	}
	return "created " + where, nil
}

func printDevBanner(w io.Writer, c devCredentials, dir string) {
	fmt.Fprintf(w, `
Visor is running in dev mode. Stop it with Ctrl-C.

  Sign-in page   %s
  MCP endpoint   %s
  Admin API      %s/api/v1  (OpenAPI: %s/api/v1/openapi.json)

  Tenant         %s
  Owner login    %s / %s
  Operator key   %s
  Agent key      %s  (agent %q)

Credentials are kept in %s and reused next time.
Try: curl -H "Authorization: Bearer %s" %s/api/v1/tenants/%s/agents

Connect Claude Code (sign in as the owner when the browser opens):
  %s
or with the operator key instead of OAuth:
  %s
Other clients (Claude Desktop, Cursor, VS Code, Windsurf, mcp-remote, the SDKs): docs/clients.md

`, c.DashboardURL, c.MCPURL, c.BaseURL, c.BaseURL, c.Tenant, c.OwnerEmail, c.OwnerPassword,
		c.OperatorKey, c.AgentKey, c.Agent, credentialsPath(dir), c.OperatorKey, c.BaseURL, c.Tenant,
		claudeCodeSnippet(c.MCPURL, ""), claudeCodeSnippet(c.MCPURL, c.OperatorKey))
}

// claudeCodeSnippet is the command that adds the endpoint to Claude Code,
// with OAuth or, given a key, with the key as a header.
func claudeCodeSnippet(mcpURL, key string) string {
	cmd := "claude mcp add --transport http visor " + mcpURL
	if key != "" {
		cmd += ` --header "Authorization: Bearer ` + key + `"`
	}
	return cmd
}

func writeJSONFile(path string, v any, mode os.FileMode) error {
	b, err := jsonIndent(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
