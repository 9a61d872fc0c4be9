// Package dbsources is the tenant's list of database sources and the four
// db_* tools that let an AI employee read them: list the sources it may
// use, describe one, run one read-only query, explain a query's plan.
//
// A source is a name, a driver, a connection string whose password is
// sealed at rest (services/secrets), optional schema and table allow
// lists, and limits. An employee uses the sources its settings name
// ([capabilities] db_sources), and only those. Read-only is enforced by the
// database (a read-only transaction as a role the operator makes
// read-only, a server-side statement timeout), by Visor's own caps on rows,
// bytes, time and concurrency, and by refusing what a read-only
// transaction would still allow (more than one statement, COPY, LOAD DATA,
// INTO OUTFILE, session changes, locking reads). The code that talks to the
// databases implements Driver outside this package. docs/db-sources.md is
// the operator's guide.
package dbsources

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Kind is a source's database driver.
type Kind string

// The drivers.
const (
	Postgres Kind = "postgres"
	MySQL    Kind = "mysql" // MySQL and MariaDB
)

// Kinds lists the drivers in the order operators see them.
var Kinds = []Kind{Postgres, MySQL}

// Source is one database source of a tenant.
type Source struct {
	ID       uuid.UUID `json:"id"`
	TenantID uuid.UUID `json:"-"`
	Name     string    `json:"name"`
	Kind     Kind      `json:"driver"`
	// Endpoint is where and as whom to connect, without the password.
	Endpoint Endpoint `json:"endpoint"`
	// SealedPassword is the password sealed by services/secrets; it never
	// leaves the service. PasswordSet says whether there is one.
	SealedPassword string    `json:"-"`
	PasswordSet    bool      `json:"password_set"`
	Schemas        []string  `json:"schemas"`
	Tables         []string  `json:"tables"`
	Limits         Limits    `json:"limits"`
	Description    string    `json:"description"`
	CreatedBy      string    `json:"created_by"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Endpoint is a source's connection string without its password.
type Endpoint struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Database string `json:"database"`
	User     string `json:"user"`
	// SSLMode is disable, prefer, require or verify-full, for both drivers.
	SSLMode string `json:"sslmode"`
}

// Limits bound what one query of a source may cost. In JSON the timeout
// is statement_timeout_ms.
type Limits struct {
	// StatementTimeout is set on the server for every statement.
	StatementTimeout time.Duration `json:"-"`
	// MaxRows and MaxBytes cap one answer; the rest is cut and the answer
	// says which cap cut it.
	MaxRows  int `json:"max_rows"`
	MaxBytes int `json:"max_bytes"`
	// MaxConcurrent bounds the queries running at once on one replica.
	MaxConcurrent int `json:"max_concurrent"`
}

// MarshalJSON writes the timeout in milliseconds.
func (l Limits) MarshalJSON() ([]byte, error) {
	type plain Limits
	return json.Marshal(struct {
		StatementTimeoutMS int64 `json:"statement_timeout_ms"`
		plain
	}{l.StatementTimeout.Milliseconds(), plain(l)})
}

// JSONSchema describes the JSON encoding, for API documents.
func (Limits) JSONSchema() map[string]any {
	n := func(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }
	return map[string]any{"type": "object", "required": []string{"statement_timeout_ms", "max_rows", "max_bytes", "max_concurrent"},
		"properties": map[string]any{
			"statement_timeout_ms": n("Server-side statement timeout."), "max_rows": n("Rows per answer."),
			"max_bytes": n("Bytes of rows per answer."), "max_concurrent": n("Queries at once on one replica."),
		}}
}

// Target is everything a Driver needs to reach a source: built by the
// service for one call, with the password opened.
type Target struct {
	// Key identifies the source's current version, so a Driver may keep a
	// pool per Key; a changed source gets a new Key.
	Key      string
	Kind     Kind
	Endpoint Endpoint
	Password string
	Scope    Scope
	Limits   Limits
}

// Scope is a source's allow lists; empty lists allow everything the
// database role may read.
type Scope struct {
	Schemas []string
	// Tables are "schema.table" names.
	Tables []string
}

// Driver talks to one kind of database. Every method runs inside a
// read-only transaction with the target's statement timeout set on the
// server, and stops the statement on the server when ctx ends. Errors that
// are the database's answer (syntax, permission, timeout, a refused write)
// are fault.Invalid or fault.Forbidden with the database's message; an
// unreachable or refused connection is fault.Unavailable.
type Driver interface {
	// Check connects, as a save does, and reports a clear error.
	Check(ctx context.Context, t Target) error
	// Describe lists the schemas, tables and columns within scope, at most
	// maxTables tables.
	Describe(ctx context.Context, t Target, maxTables int) (Schema, error)
	// Query runs one read-only statement and returns at most the target's
	// caps of rows and bytes.
	Query(ctx context.Context, t Target, sql string) (Answer, error)
	// Explain returns the plan of one statement without running it.
	Explain(ctx context.Context, t Target, sql string) (Answer, error)
	// Forget closes what the driver keeps for key (a removed or changed
	// source).
	Forget(key string)
}

// Column is one column of an answer.
type Column struct {
	Name string `json:"name"`
	// Type is the database's type name (int4, numeric, varchar, …).
	Type string `json:"type"`
}

// Answer is the result of a query or an explain. Values are JSON-ready:
// numbers (integers beyond ±2^53 as strings), strings, booleans, null,
// decimals as strings, dates as YYYY-MM-DD, timestamps as RFC 3339, bytes
// as base64 strings, JSON as JSON.
type Answer struct {
	Columns []Column `json:"columns"`
	Rows    [][]any  `json:"rows"`
	// Truncated is set when a cap cut the rows; Cap names it (max_rows or
	// max_bytes).
	Truncated bool   `json:"truncated"`
	Cap       string `json:"cap,omitempty"`
}

// The caps an answer can be cut by.
const (
	CapRows  = "max_rows"
	CapBytes = "max_bytes"
)

// Schema is what describe returns.
type Schema struct {
	Tables []Table `json:"tables"`
	// Truncated is set when more tables matched than were listed.
	Truncated bool `json:"truncated"`
}

// Table is one table or view with its columns.
type Table struct {
	Schema  string        `json:"schema"`
	Name    string        `json:"name"`
	Kind    string        `json:"kind"` // table or view
	Columns []TableColumn `json:"columns"`
}

// TableColumn is one column of a described table.
type TableColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}
