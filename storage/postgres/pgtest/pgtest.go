// Package pgtest gives each test its own freshly migrated Postgres database,
// cloned from a template that is migrated once per schema version.
//
// Set VISOR_TEST_DATABASE_URL to point at a server (default: postgres on
// 127.0.0.1:5432). When the server cannot be reached the test is skipped
// with a loud reason, unless VISOR_TEST_REQUIRE_SERVICES=1 (set by CI), in
// which case it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/storage/postgres"
)

// DefaultAdminURL is used when VISOR_TEST_DATABASE_URL is unset.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of the maintenance database tests create
// databases through.
func AdminURL() string {
	if u := os.Getenv("VISOR_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultAdminURL
}

// Unavailable skips or fails t because service is not reachable, depending
// on VISOR_TEST_REQUIRE_SERVICES.
func Unavailable(t testing.TB, service string, err error) {
	t.Helper()
	if os.Getenv("VISOR_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatalf("%s is required (VISOR_TEST_REQUIRE_SERVICES=1) but unavailable: %v", service, err)
	}
	t.Skipf("SKIPPED: %s unavailable (%v); set VISOR_TEST_REQUIRE_SERVICES=1 to make this a failure", service, err)
}

// New returns a DB on a fresh, fully migrated database that is dropped when
// the test ends.
func New(t testing.TB) *postgres.DB {
	t.Helper()
	url := NewURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// NewURL creates a fresh, fully migrated database and returns its URL, for
// tests that hand it to another process. It is dropped when the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		Unavailable(t, "Postgres", err)
	}
	defer admin.Close(context.Background())

	tmpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("prepare template database: %v", err)
	}
	name := "visor_t_" + randHex(8)
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl))
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "is being accessed by other users") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Logf("drop test database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(AdminURL(), name)
}

// ensureTemplate returns the name of a template database migrated to the
// current schema, building it once under an advisory lock.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	ms, err := postgres.LoadMigrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Version, m.Up, m.Down)
	}
	name := "visor_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]

	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(7306)`); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), `SELECT pg_advisory_unlock(7306)`)
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_b"
	if _, err := admin.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", err
	}
	db, err := postgres.Open(ctx, withDatabase(AdminURL(), building))
	if err != nil {
		return "", err
	}
	_, err = db.MigrateUp(ctx)
	db.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	_, err = admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name))
	return name, err
}

// withDatabase returns url with its database path replaced by db.
func withDatabase(url, db string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url
	}
	rest := ""
	if i := strings.Index(url, "?"); i >= 0 {
		rest = url[i:]
	}
	user := cfg.User
	if cfg.Password != "" {
		user += ":" + cfg.Password
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s%s", user, cfg.Host, cfg.Port, db, rest)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
