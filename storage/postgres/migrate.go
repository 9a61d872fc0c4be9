package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/visorhq/visor/migrations"
)

// Migration is one numbered schema change.
type Migration struct {
	Version   int
	Name      string
	Up, Down  string
	AppliedAt *time.Time
}

var migrationName = regexp.MustCompile(`^(\d{6})_([a-z0-9_]+)\.(up|down)\.sql$`)

// migrationLock is the advisory lock key held while migrating, so two
// `visor migrate up` runs never interleave.
const migrationLock = 0x76697330 // "vis0"

// LoadMigrations reads the embedded migrations in version order.
func LoadMigrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(migrations.FS, e.Name())
		if err != nil {
			return nil, err
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		}
		if m[3] == "up" {
			mig.Up = string(body)
		} else {
			mig.Down = string(body)
		}
	}
	var out []Migration
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migration %06d_%s needs both an up and a down file", m.Version, m.Name)
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	return out, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS visor_schema_migrations (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now())`

// MigrationStatus returns every migration with AppliedAt set for the applied
// ones, and whether River's schema is current.
func (db *DB) MigrationStatus(ctx context.Context) (ms []Migration, riverCurrent bool, err error) {
	ms, err = LoadMigrations()
	if err != nil {
		return nil, false, err
	}
	applied := map[int]time.Time{}
	var exists bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('visor_schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, false, err
	}
	if exists {
		rows, _ := db.Pool.Query(ctx, `SELECT version, applied_at FROM visor_schema_migrations`)
		var v int
		var at time.Time
		if _, err := pgx.ForEachRow(rows, []any{&v, &at}, func() error { applied[v] = at; return nil }); err != nil {
			return nil, false, err
		}
	}
	for i := range ms {
		if at, ok := applied[ms[i].Version]; ok {
			ms[i].AppliedAt = &at
		}
	}
	rm, err := db.riverMigrator()
	if err != nil {
		return nil, false, err
	}
	res, err := rm.Validate(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("check River schema: %w", err)
	}
	return ms, res.OK, nil
}

// CheckCurrent returns an error telling the operator to run
// `visor migrate up` when any migration (Visor's or River's) is pending.
func (db *DB) CheckCurrent(ctx context.Context) error {
	ms, riverOK, err := db.MigrationStatus(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	pending := 0
	for _, m := range ms {
		if m.AppliedAt == nil {
			pending++
		}
	}
	if pending > 0 || !riverOK {
		return fmt.Errorf("the database schema is behind (%d Visor migration(s) pending, River current: %t); run `visor migrate up`", pending, riverOK)
	}
	return nil
}

// MigrateUp applies River's migrations and every pending Visor migration,
// each in its own transaction, under an advisory lock. It returns the
// versions it applied.
func (db *DB) MigrateUp(ctx context.Context) ([]int, error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return nil, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)

	rm, err := db.riverMigrator()
	if err != nil {
		return nil, err
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("migrate River schema: %w", err)
	}
	if _, err := conn.Exec(ctx, createMigrationsTable); err != nil {
		return nil, err
	}
	ms, _, err := db.MigrationStatus(ctx)
	if err != nil {
		return nil, err
	}
	var done []int
	for _, m := range ms {
		if m.AppliedAt != nil {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.Up); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO visor_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("apply migration %06d_%s: %w", m.Version, m.Name, err)
		}
		done = append(done, m.Version)
	}
	return done, nil
}

// MigrateDown rolls back the newest `steps` applied Visor migrations. With
// river set and nothing of Visor's left applied, it also removes River's
// schema.
func (db *DB) MigrateDown(ctx context.Context, steps int, river bool) ([]int, error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return nil, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)

	ms, _, err := db.MigrationStatus(ctx)
	if err != nil {
		return nil, err
	}
	var done []int
	for i := len(ms) - 1; i >= 0 && len(done) < steps; i-- {
		m := ms[i]
		if m.AppliedAt == nil {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.Down); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM visor_schema_migrations WHERE version = $1`, m.Version)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("roll back migration %06d_%s: %w", m.Version, m.Name, err)
		}
		done = append(done, m.Version)
	}
	if river && len(done) == countApplied(ms) {
		rm, err := db.riverMigrator()
		if err != nil {
			return done, err
		}
		if _, err := rm.Migrate(ctx, rivermigrate.DirectionDown, &rivermigrate.MigrateOpts{TargetVersion: -1}); err != nil {
			return done, fmt.Errorf("remove River schema: %w", err)
		}
	}
	return done, nil
}

func countApplied(ms []Migration) int {
	n := 0
	for _, m := range ms {
		if m.AppliedAt != nil {
			n++
		}
	}
	return n
}

func (db *DB) riverMigrator() (*rivermigrate.Migrator[pgx.Tx], error) {
	return rivermigrate.New(riverpgxv5.New(db.Pool), nil)
}
