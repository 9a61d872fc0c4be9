package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/visorhq/visor/storage/postgres"
)

func migrateCommand() command {
	return command{
		name: "migrate", args: "up | down [-steps N] [-river] | status",
		summary: "apply, roll back or list schema migrations (Visor's and River's)",
		detail: `up      applies River's queue schema and every pending Visor migration, each in
        its own transaction, under an advisory lock (safe to run from several
        replicas at once). Run it before starting a new version of serve/worker.
down    rolls back the newest -steps Visor migrations (default 1); with -river
        and nothing of Visor's left applied, also removes River's schema.
status  lists every migration and whether it is applied.
Needs only Postgres (VISOR_DATABASE_URL).`,
		run: runMigrate,
	}
}

func runMigrate(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	steps := fs.Int("steps", 1, "down: how many migrations to roll back")
	all := fs.Bool("all", false, "down: roll back every migration")
	river := fs.Bool("river", false, "down: also remove River's schema once Visor's is gone")
	if len(args) == 0 {
		fs.Usage()
		return errUsage
	}
	if strings.HasPrefix(args[0], "-") { // -h, or flags before the action
		if err := parse(fs, args); err != nil {
			return err
		}
		fs.Usage()
		return errUsage
	}
	verb := args[0]
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if verb != "up" && verb != "down" && verb != "status" {
		fmt.Fprintf(e.stderr, "visor migrate: unknown action %q; want up, down or status\n", verb)
		return errUsage
	}
	cfg, err := LoadConfig(e.getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, e.stderr)
	db, err := openPostgres(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	switch verb {
	case "up":
		done, err := db.MigrateUp(ctx)
		log.Info("migrated up", "applied", done)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "schema is current (%d migration(s) applied now)\n", len(done))
	case "down":
		n := *steps
		if *all {
			n = 1 << 30
		}
		done, err := db.MigrateDown(ctx, n, *river)
		log.Info("migrated down", "rolled_back", done)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "rolled back %d migration(s): %v\n", len(done), done)
	case "status":
		return printStatus(ctx, e.stdout, db)
	}
	return nil
}

func printStatus(ctx context.Context, w io.Writer, db *postgres.DB) error {
	ms, riverOK, err := db.MigrationStatus(ctx)
	if err != nil {
		return fmt.Errorf("read migration status: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
	pending := 0
	for _, m := range ms {
		at := "pending"
		if m.AppliedAt != nil {
			at = m.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
		} else {
			pending++
		}
		fmt.Fprintf(tw, "%06d\t%s\t%s\n", m.Version, m.Name, at)
	}
	riverState := "current"
	if !riverOK {
		riverState = "behind"
	}
	fmt.Fprintf(tw, "river\tqueue schema\t%s\n", riverState)
	if err := tw.Flush(); err != nil {
		return err
	}
	if pending > 0 || !riverOK {
		fmt.Fprintln(w, "schema is behind; run `visor migrate up`")
	} else {
		fmt.Fprintln(w, "schema is current")
	}
	return nil
}
